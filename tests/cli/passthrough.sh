#!/bin/sh
# SPDX-License-Identifier: MIT
# passthrough.sh - a source with its own `sink:` (NEXMark q0's shape):
# every record the source keeps reaches the sink as read, also while a
# window reads the same source; the run summary counts them as rows out;
# a source without a sink and without readers is still refused.
# Usage: passthrough.sh TIDEMARK SOURCE_DIR
. "$(dirname "$0")/lib.sh"
setup "$@"

cat >"$T/pass.yaml" <<YAML
name: pass
sources:
  in:
    type: file
    path: tests/cli/data/refire.jsonl
    schema: {k: string, v: int64, ts: timestamp}
    timestamp.field: ts
    sink: copy
sinks:
  copy: {type: file, path: $T/copy.jsonl}
YAML
expect_exit "pass-through" 0 "$TM" run "$T/pass.yaml" --quiet
# The expected lines come from the input itself, field by field (awk),
# not from tidemark: {"k":..,"v":..,"ts":..} in schema order.
awk -F'[:,}]' '{ print $2 "," $4 "," $6 }' tests/cli/data/refire.jsonl \
    | sed 's/"//g' | sort >"$T/want"
sed 's/[{}"]//g; s/k://; s/v://; s/ts://' "$T/copy.jsonl" | sort >"$T/got"
cmp -s "$T/want" "$T/got" || {
    diff "$T/want" "$T/got" >&2
    fail "pass-through rows differ from the input"
}
n=$(wc -l <tests/cli/data/refire.jsonl | tr -d ' ')
expect_in "summary" "$T/err" "$n records in, $n rows out"

# With a window on the same source: both outputs.
cat >"$T/both.yaml" <<YAML
name: both
sources:
  in:
    type: file
    path: tests/cli/data/refire.jsonl
    schema: {k: string, v: int64, ts: timestamp}
    timestamp.field: ts
    watermark: {max_out_of_orderness: 1h}
    sink: copy
windows:
  w:
    from: in
    key_by: k
    window: {type: tumbling, size: 1h}
    sink: counts
sinks:
  copy: {type: file, path: $T/copy2.jsonl}
  counts: {type: file, path: $T/counts.jsonl}
YAML
expect_exit "pass-through and window" 0 "$TM" run "$T/both.yaml" --quiet \
    --parallelism 2
[ "$(wc -l <"$T/copy2.jsonl" | tr -d ' ')" = "$n" ] || fail "copy2: not $n rows"
na=$(grep -c '"k":"a"' tests/cli/data/refire.jsonl)
nb=$(grep -c '"k":"b"' tests/cli/data/refire.jsonl)
expect_in "counts a" "$T/counts.jsonl" "\"k\":\"a\",\"count\":$na,"
expect_in "counts b" "$T/counts.jsonl" "\"k\":\"b\",\"count\":$nb,"

# Nothing reads a source without a sink: refused (exit 3).
sed '/sink: copy/d' "$T/pass.yaml" >"$T/none.yaml"
expect_exit "no reader" 3 "$TM" validate "$T/none.yaml"
expect_in "no reader" "$T/err" 'no windows, joins or source sinks: nothing reads the sources'
echo "passthrough: OK"
