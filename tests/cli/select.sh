#!/bin/sh
# SPDX-License-Identifier: MIT
# select.sh - a sink's `select` key: the columns written, in its order and
# under its aliases, for window results (JSON, a YAML list) and
# pass-through rows (CSV, a comma-separated string, the header following
# the selection); the pane members only when selected; and the refusals
# of `tidemark validate` (exit 3) naming the key.
# Usage: select.sh TIDEMARK SOURCE_DIR
. "$(dirname "$0")/lib.sh"
setup "$@"

cat >"$T/in.jsonl" <<'EOF'
{"page":"a","user":"u1","ts":1000}
{"page":"b","user":"u2","ts":2000}
{"page":"a","user":"u3","ts":9999}
{"page":"a","user":"u1","ts":10000}
EOF
cat >"$T/job.yaml" <<YAML
name: select
sources:
  clicks:
    type: file
    path: $T/in.jsonl
    schema: {page: string, user: string, ts: timestamp}
    timestamp.field: ts
    sink: copy
windows:
  uv:
    from: clicks
    key_by: page
    window: {type: tumbling, size: 10s}
    aggregates: [{fn: count_distinct, field: user, as: uv}]
    sink: out
sinks:
  out: {type: file, path: $T/out.jsonl, select: [page, uv, window_end AS minute, pane]}
  copy: {type: file, path: $T/copy.csv, format: csv, select: "ts AS t, user"}
YAML
expect_exit "run" 0 "$TM" run "$T/job.yaml" --quiet
cat >"$T/want.jsonl" <<'EOF'
{"page":"a","uv":2,"minute":10000,"pane":0}
{"page":"b","uv":1,"minute":10000,"pane":0}
{"page":"a","uv":1,"minute":20000,"pane":0}
EOF
same_multiset "window results" "$T/want.jsonl" "$T/out.jsonl"
printf 't,user\n1000,u1\n2000,u2\n9999,u3\n10000,u1\n' >"$T/want.csv"
cmp -s "$T/want.csv" "$T/copy.csv" || {
    diff "$T/want.csv" "$T/copy.csv" >&2
    fail "pass-through CSV differs"
}

# Refusals: exit 3 and a message naming the key.
refused() {
    what=$1
    msg=$2
    shift 2
    expect_exit "$what" 3 "$TM" validate "$T/job.yaml" "$@"
    expect_in "$what" "$T/err" "$msg"
}
refused "unknown column" \
    'sinks.out.select: "pag" is not a column of window "uv" (did you mean "page"?)' \
    --set 'sinks.out.select=pag, uv'
refused "pass-through column" \
    'sinks.copy.select: "amount" is not a column of source "clicks" (its columns: page, user, ts)' \
    --set 'sinks.copy.select=amount'
refused "duplicate output" \
    'sinks.out.select: output name "page" is given twice ("page" and "uv AS page"); rename one with AS' \
    --set 'sinks.out.select=page, uv AS page'
refused "malformed item" \
    'sinks.out.select: expected "name" or "name AS alias", got "page uv"' \
    --set 'sinks.out.select=page uv'
refused "empty item" 'sinks.out.select: expected comma-separated field names' \
    --set 'sinks.out.select=page, , uv'
refused "late output" \
    'sinks.out.select: window "uv" writes its late records here (late_output); select applies to results and pass-through rows, not to late records' \
    --set windows.uv.late_output=out
refused "dead letter" \
    "sinks.copy.select: this sink is the job's dead_letter; select does not apply to dead letters" \
    --set dead_letter=copy
refused "global window" \
    'sinks.out.select: "window_end" is not a column of window "uv" (its columns: page, uv)' \
    --set windows.uv.window.type=global --set windows.uv.trigger=count \
    --set windows.uv.trigger.count=2
echo "select: OK"
