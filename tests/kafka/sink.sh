#!/bin/sh
# SPDX-License-Identifier: MIT
# sink.sh - Kafka sinks: results in upsert mode, late records and dead
# letters each to a topic of their own, against the same job writing
# files.  Checked: every result message's key names the group key and the
# window (so a compacted topic keeps one row per key and window), and the
# last value of every key is the row the file sink's final upsert table
# holds; the late topic's values are the file's late lines; the dead
# letter topic holds one message per malformed record with its raw text.
# Usage: sink.sh TIDEMARK SOURCE_DIR MOCK TOOL
. "$(dirname "$0")/lib.sh"
kafka_init "$@"

start_mock clicks:1 out:1 late:1 dead:1
# By hand, with watermarks after every record (bound 0, on_event) and
# allowed_lateness 5 s on 10 s windows (relative times):
#   1 s u1, 2 s u2, 12 s u1  -> wm 11.999: [0,10) fires (u1 1, u2 1)
#   3 s u1                   -> within lateness: [0,10) u1 refires, 2
#   25 s u2                  -> wm 24.999: [10,20) fires (u1 1); [0,10)
#                               is cleaned up (end + lateness passed)
#   4 s u1                   -> too late: late output
#   a malformed line         -> dead letter
#   26 s u3, 40 s u1         -> [20,30) fires at the end (u2 1, u3 1),
#                               [40,50) u1 1
rel() {
    printf '{"user":"%s","ts":%s}\n' "$1" $((T0 + $2))
}
{
    rel u1 1000
    rel u2 2000
    rel u1 12000
    rel u1 3000
    rel u2 25000
    rel u1 4000
    echo '{"user":"u9","ts":"not a time"}'
    rel u3 26000
    rel u1 40000
} >"$W/d.jsonl"
produce clicks --partition 0 --key-field user --ts-field ts "$W/d.jsonl"

# $1 source YAML, $2..$4 the three sinks' YAML bodies.
job() {
    cat <<EOF
name: sinks
dead_letter: dead
sources:
$1
    schema: {user: string, ts: int64}
    timestamp.field: ts
    watermark: {strategy: bounded, max_out_of_orderness: 0, emit: on_event}
windows:
  w:
    from: clicks
    key_by: user
    window: {type: tumbling, size: 10s}
    allowed_lateness: 5s
    output_mode: upsert
    sink: out
    late_output: late
sinks:
  out: $2
  late: $3
  dead: $4
EOF
}
job "  clicks:
    type: file
    path: $W/d.jsonl" \
    "{type: file, path: $W/ref-out.jsonl}" \
    "{type: file, path: $W/ref-late.jsonl}" \
    "{type: file, path: $W/ref-dead.jsonl}" >"$W/ref.yaml"
run_fg ref "$W/ref.yaml"
# Final table: [0,10) u1 2, u2 1; [10,20) u1 1; [20,30) u2 1, u3 1;
# [40,50) u1 1.
[ "$(count_lines "$W/ref-out.jsonl")" -eq 6 ] ||
    fail "reference: expected 6 upsert rows," \
        "got $(count_lines "$W/ref-out.jsonl")"
[ "$(count_lines "$W/ref-late.jsonl")" -eq 1 ] ||
    fail "reference: expected 1 late row"
[ "$(count_lines "$W/ref-dead.jsonl")" -eq 1 ] ||
    fail "reference: expected 1 dead letter"

ksink() {
    echo "{type: kafka, brokers: \"$BOOT\", topic: $1}"
}
job "$(kafka_source_yaml clicks clicks gs "stop: end")" \
    "$(ksink out)" "$(ksink late)" "$(ksink dead)" >"$W/k.yaml"
run_fg k "$W/k.yaml"

consume out >"$W/out.tsv"
consume late >"$W/late.tsv"
consume dead >"$W/dead.tsv"

# Keys of results: JSON naming the user and the window.
awk -F'\t' '$2 !~ /"user":"u[0-9]"/ || $2 !~ /"window_start":/ ||
            $2 !~ /"window_end":/ { bad++ }
            END { exit bad > 0 }' "$W/out.tsv" ||
    fail "result keys must be JSON with the group key and the window"
# Upsert: 7 messages (the refire of [0,10) u1 is an update of the same
# key), the last value per key is the final table.
[ "$(count_lines "$W/out.tsv")" -eq 7 ] ||
    fail "expected 7 result messages, got $(count_lines "$W/out.tsv")"
awk -F'\t' '{ last[$2] = $3 } END { for (k in last) print last[k] }' \
    "$W/out.tsv" >"$W/compacted.jsonl"
same_lines "$W/ref-out.jsonl" "$W/compacted.jsonl"
# Late records and dead letters.
values_of "$W/late.tsv" >"$W/late.jsonl"
same_lines "$W/ref-late.jsonl" "$W/late.jsonl"
[ "$(count_lines "$W/dead.tsv")" -eq 1 ] || fail "expected 1 dead letter"
grep -q 'not a time' "$W/dead.tsv" ||
    fail "the dead letter does not carry the raw record"
# Its key is its location: topic[partition]@offset (the 7th message).
[ "$(cut -f2 "$W/dead.tsv")" = 'clicks[0]@6' ] ||
    fail "dead letter key: expected clicks[0]@6, got $(cut -f2 "$W/dead.tsv")"
echo "sink.sh: ok"
