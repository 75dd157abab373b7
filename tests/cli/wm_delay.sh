#!/bin/sh
# SPDX-License-Identifier: MIT
# wm_delay.sh - watermark.delay, Flink SQL's WATERMARK FOR ts AS ts -
# INTERVAL: with delay 0 and on_event emission a record at 9999 makes the
# watermark 9999, so the window [0, 10000) fires and a record at 5000
# after it is late; with max_out_of_orderness 0 the watermark is 9998
# and the same record still counts.  The keys' refusals exit 3.
# Usage: wm_delay.sh TIDEMARK SOURCE_DIR
. "$(dirname "$0")/lib.sh"
setup "$@"

printf '%s\n' '{"k":"a","ts":1000}' '{"k":"a","ts":9999}' \
    '{"k":"a","ts":5000}' >"$T/in.jsonl"
job() {
    cat >"$T/job.yaml" <<YAML
name: delay
sources:
  in:
    type: file
    path: $T/in.jsonl
    schema: {k: string, ts: timestamp}
    timestamp.field: ts
    watermark: {strategy: bounded, $1, emit: on_event}
windows:
  w:
    from: in
    key_by: k
    window: {type: tumbling, size: 10s}
    sink: out
    late_output: late
sinks:
  out: {type: file, path: $T/out.jsonl, select: "k, count"}
  late: {type: file, path: $T/late.jsonl}
YAML
}

job "delay: 0"
expect_exit "delay 0" 0 "$TM" run "$T/job.yaml" --quiet
echo '{"k":"a","count":2}' >"$T/want"
same_multiset "delay 0: results" "$T/want" "$T/out.jsonl"
echo '{"k":"a","ts":5000}' >"$T/want"
same_multiset "delay 0: late" "$T/want" "$T/late.jsonl"

job "max_out_of_orderness: 0"
expect_exit "bound 0" 0 "$TM" run "$T/job.yaml" --quiet
echo '{"k":"a","count":3}' >"$T/want"
same_multiset "bound 0: results" "$T/want" "$T/out.jsonl"
[ ! -s "$T/late.jsonl" ] || fail "bound 0: a late record"

# delay 5s: the watermark stays at 4999; nothing is late.
job "delay: 5s"
expect_exit "delay 5s" 0 "$TM" run "$T/job.yaml" --quiet
echo '{"k":"a","count":3}' >"$T/want"
same_multiset "delay 5s: results" "$T/want" "$T/out.jsonl"

job "delay: 0"
expect_exit "both" 3 "$TM" validate "$T/job.yaml" \
    --set sources.in.watermark.max_out_of_orderness=1s
expect_in "both" "$T/err" 'sources.in.watermark.delay: give it or watermark.max_out_of_orderness, not both'
expect_exit "punctuated" 3 "$TM" validate "$T/job.yaml" \
    --set sources.in.watermark.strategy=punctuated
expect_in "punctuated" "$T/err" 'sources.in.watermark.delay: only with watermark.strategy bounded (strategy is punctuated)'
expect_exit "monotonous" 3 "$TM" validate "$T/job.yaml" \
    --set sources.in.watermark.strategy=monotonous
expect_in "monotonous" "$T/err" '(strategy is monotonous)'
echo "wm_delay: OK"
