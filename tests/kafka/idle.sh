#!/bin/sh
# SPDX-License-Identifier: MIT
# idle.sh - one partition of four never receives a record.  With
# watermark.idle_timeout the silent partition is left out of the minimum
# and windows are written while the job runs; without it the watermark
# stays at the silent partition's (none) and nothing is written - the
# stall the seeds warn of.  Cancelled with on_cancel: drain, both runs
# then write exactly what the same job over the three files writes.
# Usage: idle.sh TIDEMARK SOURCE_DIR MOCK TOOL
. "$(dirname "$0")/lib.sh"
kafka_init "$@"

start_mock clicks:4
for p in 0 1 2; do
    gen_clicks "$p" 90 >"$W/part-$p.jsonl"
    produce clicks --partition "$p" --key-field user --ts-field ts \
        "$W/part-$p.jsonl"
done
# Partition 3 stays empty.

window_yaml() {
    cat <<EOF
windows:
  w:
    from: clicks
    key_by: user
    window: {type: tumbling, size: 10s}
    aggregates: [count() as n, max(ts) as last]
    sink: out
sinks:
  out: {type: file, path: $W/$1}
EOF
}
{
    cat <<EOF
name: idle
sources:
  clicks:
    type: file
    path: $W/part-*.jsonl
    schema: {user: string, ts: int64, p: int64}
    timestamp.field: ts
    watermark: {strategy: bounded, max_out_of_orderness: 1s}
EOF
    window_yaml ref.jsonl
} >"$W/ref.yaml"
run_fg ref "$W/ref.yaml"
[ "$(count_lines "$W/ref.jsonl")" -ge 30 ] || fail "reference too small"

# $1: name and group; $2: the idle timeout (0: none).
kafka_job() {
    {
        echo "name: idle"
        echo "on_cancel: drain"
        echo "commit.interval: 200ms"
        echo "sources:"
        kafka_source_yaml clicks clicks "$1" \
            "schema: {user: string, ts: int64, p: int64}" \
            "timestamp.field: ts" \
            "watermark: {strategy: bounded, max_out_of_orderness: 1s," \
            "            idle_timeout: $2}"
        window_yaml "$1.jsonl"
    } >"$W/$1.yaml"
}

# 1. With an idle timeout: results while running.  The timeout must
# exceed the time a partition takes to deliver its first records after
# the assignment (~0.1-1 s on the mock): a partition idle before its
# backlog arrives makes that backlog late (as in Flink).
kafka_job withidle 3s
run_bg withidle "$W/withidle.yaml"
pid=$LAST_PID
wait_grep 1 20 "$W/withidle.log" '\bassigned\b'
t_assigned=$(now_ms)
wait_lines 1 20 "$W/withidle.jsonl"
t_first=$(($(now_ms) - t_assigned))
echo "idle.sh: first result ${t_first} ms after the assignment" >&2
# Every window but the last 1-2 (the watermark is max - 1 s) while
# running.
wait_lines $(($(count_lines "$W/ref.jsonl") - 10)) 20 "$W/withidle.jsonl"
stop_pid "$pid" TERM
[ "$WAIT_RC" -eq 0 ] || fail "withidle exited with status $WAIT_RC"
same_lines "$W/ref.jsonl" "$W/withidle.jsonl"

# 2. Without: nothing for twice as long as the first run needed (at
# least 2 s), then the drain writes everything.
kafka_job noidle 0
run_bg noidle "$W/noidle.yaml"
pid=$LAST_PID
wait_grep 1 20 "$W/noidle.log" '\bassigned\b'
quiet=$((t_first * 2))
[ "$quiet" -ge 2000 ] || quiet=2000
sleep "$((quiet / 1000)).$(printf '%03d' $((quiet % 1000)))"
[ "$(count_lines "$W/noidle.jsonl")" -eq 0 ] ||
    fail "windows were written although partition 3 holds the watermark"
stop_pid "$pid" TERM
[ "$WAIT_RC" -eq 0 ] || fail "noidle exited with status $WAIT_RC"
same_lines "$W/ref.jsonl" "$W/noidle.jsonl"
echo "idle.sh: ok"
