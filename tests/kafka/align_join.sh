#!/bin/sh
# SPDX-License-Identifier: MIT
# align_join.sh - watermark alignment across the two sources of a join:
# topics "left" and "right" (one partition each) feed a window join, both
# sources in alignment group g.  The left topic holds a minute of records
# an hour ahead; the right one gets its first 100 s, then (once the left
# partition is paused) the rest, ending past the left one.  The left
# partition is paused first and resumed after, and the joined pairs
# (drained at the end) are those of the same join over two files without
# alignment.
# Usage: align_join.sh TIDEMARK SOURCE_DIR MOCK TOOL
. "$(dirname "$0")/lib.sh"
kafka_init "$@"

start_mock left:1 right:1
awk -v t0="$T0" 'BEGIN {
    for (k = 0; k < 60; k++)
        printf "{\"user\":\"u%d\",\"ts\":%.0f}\n", k % 3,
               t0 + 3600000 + k * 1000;
}' >"$W/l.jsonl"
awk -v t0="$T0" 'BEGIN {
    for (k = 0; k < 368; k++)
        printf "{\"user\":\"u%d\",\"ts\":%.0f}\n", k % 3, t0 + k * 10000;
}' >"$W/r.jsonl"
head -n 10 "$W/r.jsonl" >"$W/chunk-first.jsonl"
tail -n +11 "$W/r.jsonl" >"$W/chunk-rest.jsonl"

# $1: the sources (YAML), $2: the output file.
job_yaml() {
    cat <<EOF
name: align_join
log.level: debug
on_cancel: drain
sources:
$1
joins:
  j:
    type: window
    left: left
    right: right
    left_key: user
    right_key: user
    window: {type: tumbling, size: 1m}
    sink: out
sinks:
  out: {type: file, path: $W/$2}
EOF
}
file_source() {
    cat <<EOF
  $1:
    type: file
    path: $W/$2
    schema: {user: string, ts: int64}
    timestamp.field: ts
EOF
}
job_yaml "$(file_source left l.jsonl)
$(file_source right r.jsonl)" ref.jsonl >"$W/ref.yaml"
run_fg ref "$W/ref.yaml"
# A left record meets the right records of its user in its window (10 s
# apart, users cycling over 3: about 2 per user and minute; the left
# minute straddles two windows, T0 being whole 10 s, not minutes).
[ "$(count_lines "$W/ref.jsonl")" -ge 100 ] ||
    fail "reference too small ($(count_lines "$W/ref.jsonl") pairs)"

ALIGN="watermark.alignment: {group: g, max_drift: 1s,
        update_interval: 100ms}"
job_yaml "$(kafka_source_yaml left left gl "schema: {user: string, ts: int64}" \
    "timestamp.field: ts" "$ALIGN")
$(kafka_source_yaml right right gr "schema: {user: string, ts: int64}" \
    "timestamp.field: ts" "$ALIGN")" k.jsonl >"$W/k.yaml"
run_bg k "$W/k.yaml"
pid=$LAST_PID
wait_grep 2 20 "$W/k.log" '\bassigned\b'
produce right --partition 0 --ts-field ts "$W/chunk-first.jsonl"
produce left --partition 0 --ts-field ts "$W/l.jsonl"
wait_grep 1 20 "$W/k.log" 'debug pause .*partition=left\[0\] paused=1'
produce right --partition 0 --ts-field ts "$W/chunk-rest.jsonl"
wait_grep 1 20 "$W/k.log" 'debug pause .*partition=left\[0\] paused=0'
stop_pid "$pid" TERM
[ "$WAIT_RC" -eq 0 ] || fail "the job exited with status $WAIT_RC"
same_lines "$W/ref.jsonl" "$W/k.jsonl"
grep 'debug pause .*paused=1' "$W/k.log" | head -n 1 |
    grep -q 'partition=left\[0\]' ||
    fail "the first partition paused is not the fast one, left[0]"
echo "align_join.sh: ok"
