#!/bin/sh
# SPDX-License-Identifier: MIT
# files.sh - a Kafka source reads what a file source reads: three
# partitions with keyed, timestamped JSON records, read to their end
# (stop: end), give the same windows as the same job over one file per
# partition; so does the variant taking event time from the message
# timestamp and the key from the message key (parallelism 2); after the
# run the group's committed offsets are the partitions' end offsets with
# the watermark metadata "tdm1 wm=...".
# Usage: files.sh TIDEMARK SOURCE_DIR MOCK TOOL
. "$(dirname "$0")/lib.sh"
kafka_init "$@"

start_mock clicks:3
for p in 0 1 2; do
    gen_clicks "$p" 90 >"$W/part-$p.jsonl"
    produce clicks --partition "$p" --key-field user --ts-field ts \
        "$W/part-$p.jsonl"
done

# The window of every run here, keyed by $1, written to $W/$2.
window_yaml() {
    cat <<EOF
windows:
  w:
    from: clicks
    key_by: $1
    window: {type: tumbling, size: 10s}
    aggregates: [count() as n, min(ts) as first, max(ts) as last]
    sink: out
sinks:
  out: {type: file, path: $W/$2}
EOF
}

# The reference: one file per partition (the file source's partitions,
# each with its own watermark), the same window.
{
    cat <<EOF
name: files
sources:
  clicks:
    type: file
    path: $W/part-*.jsonl
    schema: {user: string, ts: int64, p: int64}
    timestamp.field: ts
    watermark: {strategy: bounded, max_out_of_orderness: 1s}
EOF
    window_yaml user ref.jsonl
} >"$W/ref.yaml"
run_fg ref "$W/ref.yaml"
# 3 partitions x 90 records 700 ms apart span 63 s: 7 windows, every one
# with all 5 users but the last.
[ "$(count_lines "$W/ref.jsonl")" -ge 30 ] ||
    fail "reference run wrote only $(count_lines "$W/ref.jsonl") rows"

# 1. Event time from a field.
{
    echo "name: files"
    echo "sources:"
    kafka_source_yaml clicks clicks g1 "stop: end" \
        "schema: {user: string, ts: int64, p: int64}" "timestamp.field: ts" \
        "watermark: {strategy: bounded, max_out_of_orderness: 1s}"
    window_yaml user k1.jsonl
} >"$W/k1.yaml"
run_fg k1 "$W/k1.yaml"
same_lines "$W/ref.jsonl" "$W/k1.jsonl"

# Committed: every partition at its end offset, with the watermark.
"$TOOL" offsets "$BOOT" clicks >"$W/ends.txt" || fail "offsets"
"$TOOL" committed "$BOOT" g1 clicks >"$W/committed.txt" || fail "committed"
cut -f1,3 "$W/ends.txt" >"$W/ends2.txt"
cut -f1,2 "$W/committed.txt" >"$W/committed2.txt"
if ! cmp -s "$W/ends2.txt" "$W/committed2.txt"; then
    cat "$W/ends.txt" "$W/committed.txt" >&2
    fail "committed offsets are not the end offsets"
fi
[ "$(grep -c "$(printf '\t')tdm1 wm=" "$W/committed.txt")" -eq 3 ] ||
    fail "committed metadata is not \"tdm1 wm=...\" on every partition"

# 2. Event time from the message timestamp, key from the message key,
# two subtasks in one group.
{
    echo "name: files"
    echo "parallelism: 2"
    echo "sources:"
    kafka_source_yaml clicks clicks g2 "stop: end" \
        "schema: {k: string, ts: int64, p: int64}" \
        "timestamp.source: message" "key.field: k" \
        "watermark: {strategy: bounded, max_out_of_orderness: 1s}"
    window_yaml k k2.jsonl
} >"$W/k2.yaml"
run_fg k2 "$W/k2.yaml"
sed 's/^{"user":/{"k":/' "$W/ref.jsonl" >"$W/ref-k.jsonl"
same_lines "$W/ref-k.jsonl" "$W/k2.jsonl"
echo "files.sh: ok"
