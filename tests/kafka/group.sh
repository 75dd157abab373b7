#!/bin/sh
# SPDX-License-Identifier: MIT
# group.sh - scale-out through a consumer group: two `tidemark run`
# processes with the same group share the four partitions of a topic
# keyed by the job's key, so each owns the keys of its partitions; the
# union of their results equals the same job over one file.  A record
# far ahead in every partition fires every window of the data while the
# processes run; they are then stopped without draining (on_cancel:
# stop), so the far windows are never written.
# Usage: group.sh TIDEMARK SOURCE_DIR MOCK TOOL
. "$(dirname "$0")/lib.sh"
kafka_init "$@"

start_mock clicks:4
gen_clicks 0 120 10 >"$W/all.jsonl"
far_records 4 $((T0 + 1000000)) >"$W/far.jsonl"

run_ref group "$W/all.jsonl"
# 120 records 700 ms apart over 10 users: 9 windows of up to 10 users.
[ "$n_ref" -ge 60 ] || fail "reference too small ($n_ref rows)"

start_two_members group gg

# Keyed by user: the default partitioner puts each user in one
# partition, so one process owns each key.
produce clicks --key-field user --ts-field ts "$W/all.jsonl"
produce clicks --partition-field p --ts-field ts "$W/far.jsonl"
wait_lines "$n_ref" 30 "$W/out-a.jsonl" "$W/out-b.jsonl"
stop_pid "$pid_a" TERM
[ "$WAIT_RC" -eq 0 ] || fail "process a exited with status $WAIT_RC"
stop_pid "$pid_b" TERM
[ "$WAIT_RC" -eq 0 ] || fail "process b exited with status $WAIT_RC"
cat "$W/out-a.jsonl" "$W/out-b.jsonl" >"$W/union.jsonl"
same_lines "$W/ref.jsonl" "$W/union.jsonl"
echo "group.sh: a wrote $(count_lines "$W/out-a.jsonl"), b wrote" \
    "$(count_lines "$W/out-b.jsonl") of $n_ref rows" >&2
echo "group.sh: ok"
