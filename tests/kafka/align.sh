#!/bin/sh
# SPDX-License-Identifier: MIT
# align.sh - watermark alignment pauses a partition that runs ahead.
# Partition 0 holds a minute of records an hour ahead of partition 1;
# partition 1 gets its first 100 s, then (once partition 0 is paused)
# the rest, which ends past partition 0.  With
# watermark.alignment.max_drift 1 s the source pauses partition 0 (the
# debug log says "pause ... partition=clicks[0] paused=1"), resumes it
# once partition 1 has caught up ("paused=0", after the pause), pauses
# partition 1 only later, and the results (drained at the end) are those of
# the same job over two files without alignment.
# Usage: align.sh TIDEMARK SOURCE_DIR MOCK TOOL
. "$(dirname "$0")/lib.sh"
kafka_init "$@"

start_mock clicks:2
# Partition 0: 60 records a second apart from T0 + 1 h; partition 1: 368
# records 10 s apart from T0 (its last one is T0 + 1 h + 70 s).
awk -v t0="$T0" 'BEGIN {
    for (k = 0; k < 60; k++)
        printf "{\"user\":\"a%d\",\"ts\":%.0f}\n", k % 3,
               t0 + 3600000 + k * 1000;
}' >"$W/p0.jsonl"
awk -v t0="$T0" 'BEGIN {
    for (k = 0; k < 368; k++)
        printf "{\"user\":\"b%d\",\"ts\":%.0f}\n", k % 4, t0 + k * 10000;
}' >"$W/p1.jsonl"
head -n 10 "$W/p1.jsonl" >"$W/chunk-first.jsonl"
tail -n +11 "$W/p1.jsonl" >"$W/chunk-rest.jsonl"

window_yaml() {
    cat <<EOF
    schema: {user: string, ts: int64}
    timestamp.field: ts
    watermark.strategy: bounded
$2
windows:
  w:
    from: clicks
    key_by: user
    window: {type: tumbling, size: 1m}
    aggregates: [count() as n, max(ts) as last]
    sink: out
sinks:
  out: {type: file, path: $W/$1}
EOF
}
{
    cat <<EOF
name: align
sources:
  clicks:
    type: file
    path: $W/p*.jsonl
EOF
    window_yaml ref.jsonl ""
} >"$W/ref.yaml"
run_fg ref "$W/ref.yaml"
# 61 minutes of b0..b3 plus one minute of a0..a2.
[ "$(count_lines "$W/ref.jsonl")" -ge 240 ] || fail "reference too small"

{
    echo "name: align"
    echo "log.level: debug"
    echo "on_cancel: drain"
    echo "sources:"
    kafka_source_yaml clicks clicks ga
    window_yaml k.jsonl "    watermark.alignment: {group: g, max_drift: 1s,
        update_interval: 100ms}"
} >"$W/k.yaml"
run_bg k "$W/k.yaml"
pid=$LAST_PID
wait_grep 1 20 "$W/k.log" '\bassigned\b'
produce clicks --partition 1 --ts-field ts "$W/chunk-first.jsonl"
produce clicks --partition 0 --ts-field ts "$W/p0.jsonl"
wait_grep 1 20 "$W/k.log" 'debug pause .*partition=clicks\[0\] paused=1'
produce clicks --partition 1 --ts-field ts "$W/chunk-rest.jsonl"
wait_grep 1 20 "$W/k.log" 'debug pause .*partition=clicks\[0\] paused=0'
stop_pid "$pid" TERM
[ "$WAIT_RC" -eq 0 ] || fail "the job exited with status $WAIT_RC"
same_lines "$W/ref.jsonl" "$W/k.jsonl"

pause_line=$(grep -n 'debug pause .*partition=clicks\[0\] paused=1' \
    "$W/k.log" | head -n 1 | cut -d: -f1)
resume_line=$(grep -n 'debug pause .*partition=clicks\[0\] paused=0' \
    "$W/k.log" | awk -F: -v p="$pause_line" '$1 > p { print $1; exit }')
[ -n "$resume_line" ] ||
    fail "partition clicks[0] was not resumed after its pause"
# The first pause is the fast partition's (partition 1 may be paused at
# the end, when its last records run 11 s past partition 0).
grep 'debug pause .*paused=1' "$W/k.log" | head -n 1 |
    grep -q 'partition=clicks\[0\]' ||
    fail "the first partition paused is not the fast one, clicks[0]"
echo "align.sh: ok"
