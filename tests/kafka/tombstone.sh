#!/bin/sh
# SPDX-License-Identifier: MIT
# tombstone.sh - issue 20: a Kafka message with a null value (a
# tombstone) is skipped and counted, not dead-lettered as an empty line
# (docs/kafka.md, "Operations guards").  Partition 0 of topic ev holds
# two records of key a, two tombstones between them and an empty (not
# null) value: the window counts the two records, the dead-letter sink
# receives only the empty value (located ev[0]@4), the first tombstone
# is logged once, and the run's summary counts both tombstones.
# Usage: tombstone.sh TIDEMARK SOURCE_DIR MOCK TOOL
. "$(dirname "$0")/lib.sh"
kafka_init "$@"

start_mock ev:1
{
    printf '{"k":"a","ts":%s}\n' "$T0"
    printf '{"k":"a","ts":%s,"del":true}\n' $((T0 + 100))
    printf '{"k":"b","ts":%s,"del":true}\n' $((T0 + 200))
    printf '{"k":"a","ts":%s}\n' $((T0 + 1000))
    printf '{"k":"a","ts":%s,"del":"empty"}\n' $((T0 + 1100))
} >"$W/ev.jsonl"
produce ev --partition 0 --key-field k --null-field del "$W/ev.jsonl"
consume ev --offsets >"$W/ev.tsv"
[ "$(cut -f4 "$W/ev.tsv" | grep -c -x '(null)')" -eq 2 ] ||
    fail "the tool did not produce two null values: $(cat "$W/ev.tsv")"

{
    echo "name: kafka_tombstone"
    echo "dead_letter: bad"
    echo "sources:"
    kafka_source_yaml ev ev g1 "stop: end" "schema: {k: string, ts: int64}" \
        "timestamp.field: ts"
    cat <<EOF
windows:
  w: {from: ev, key_by: k, window.size: 10s, aggregates: "count() as n",
      sink: out}
sinks:
  out: {type: file, path: $W/out.jsonl}
  bad: {type: file, path: $W/bad.jsonl}
EOF
} >"$W/job.yaml"
run_fg job "$W/job.yaml"

printf '{"k":"a","n":2,"window_start":%s,"window_end":%s,%s}\n' \
    "$T0" $((T0 + 10000)) '"timing":"on_time","pane":0,"update":false' \
    >"$W/want.jsonl"
same_lines "$W/want.jsonl" "$W/out.jsonl"
[ "$(count_lines "$W/bad.jsonl")" -eq 1 ] ||
    fail "expected one dead letter (the empty value), got" \
        "$(count_lines "$W/bad.jsonl"): $(cat "$W/bad.jsonl")"
grep -q -F '{"location":"ev[0]@4",' "$W/bad.jsonl" ||
    fail "the dead letter is not the empty value at ev[0]@4"
[ "$(grep -c -F 'a tombstone (null value) skipped' "$W/job.log")" -eq 1 ] ||
    fail "the first tombstone is not logged exactly once"
grep -q -F 'ev[0]@1: a tombstone (null value) skipped' "$W/job.log" ||
    fail "the log does not locate the first tombstone at ev[0]@1"
grep -q -F '2 Kafka tombstones (null values) skipped.' "$W/job.log" ||
    fail "the summary does not count 2 tombstones"
echo "tombstone.sh: ok"
