#!/bin/sh
# SPDX-License-Identifier: MIT
# dead_letters.sh - issue 18, defect 6 for Kafka: a message far in the
# future (2100-01-01) between two ordinary ones, read with the timestamp
# guard dead-lettering, reaches the dead-letter sink located
# "topic[partition]@offset" with the message's bytes exactly as
# produced (odd spacing kept), after the poll that read it has let the
# message go; the other two are counted in their window.
# Usage: dead_letters.sh TIDEMARK SOURCE_DIR MOCK TOOL
. "$(dirname "$0")/lib.sh"
kafka_init "$@"

start_mock ev:1
{
    printf '{"k":"a","ts":%s}\n' "$T0"
    printf '{ "k" : "a",  "ts":4102444800000 }\n'
    printf '{"k":"a","ts":%s}\n' $((T0 + 1000))
} >"$W/ev.jsonl"
produce ev --partition 0 "$W/ev.jsonl"

{
    echo "name: kafka_dead_letters"
    echo "dead_letter: bad"
    echo "timestamp_guard.dead_letter: true"
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
    fail "expected one dead letter, got $(count_lines "$W/bad.jsonl")"
grep -q -F '{"location":"ev[0]@1","reason":"timestamp 2100-01-01T00:00:00Z' \
    "$W/bad.jsonl" || fail "the dead letter is not located ev[0]@1"
grep -q -F '"raw":"{ \"k\" : \"a\",  \"ts\":4102444800000 }"}' \
    "$W/bad.jsonl" || fail "the dead letter lacks the message as produced"
echo "dead_letters.sh: ok"
