#!/bin/sh
# SPDX-License-Identifier: MIT
# selftest.sh - proves the conformance runner can fail.
#
# Usage: selftest.sh RUNNER NEGATIVE_DIR
# Every vector in NEGATIVE_DIR is deliberately wrong (a watermark off by one,
# a missing result, an unknown trigger type, malformed JSON, ...).  The
# runner must print a FAIL line for each, naming the right difference,
# print no PASS line, close with "0 passed, N failed" and exit 1.  A correct
# control vector must PASS with exit 0, and a missing path must FAIL.
set -u

runner=${1:?usage: selftest.sh RUNNER NEGATIVE_DIR}
negdir=${2:?usage: selftest.sh RUNNER NEGATIVE_DIR}
errors=0
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tdm-selftest.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT

bad() {
    echo "selftest: $*" >&2
    errors=$((errors + 1))
}

# ---- The negative vectors ----
"$runner" "$negdir" >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/out"
[ "$rc" -eq 1 ] || bad "runner exited $rc on the negative vectors (want 1)"
if grep -q '^PASS ' "$tmp/out"; then
    bad "a deliberately wrong vector passed: $(grep '^PASS ' "$tmp/out")"
fi
n=$(ls "$negdir"/*.json | wc -l)
tail -n 1 "$tmp/out" | grep -qx "0 passed, $n failed" ||
    bad "closing line: '$(tail -n 1 "$tmp/out")' (want '0 passed, $n failed')"

# Each vector must fail for its own reason: file name | text in its line.
while IFS='|' read -r name want; do
    [ -n "$name" ] || continue
    if [ ! -f "$negdir/$name.json" ]; then
        bad "missing $negdir/$name.json"
        continue
    fi
    line=$(grep -F "FAIL $name: " "$tmp/out")
    if [ -z "$line" ]; then
        bad "no FAIL line for $name"
    elif ! printf '%s\n' "$line" | grep -qF -- "$want"; then
        bad "$name failed for the wrong reason: $line (want: $want)"
    fi
done <<'EOF'
neg-watermark-off-by-one|after input 1: expected {"watermark":26} but got {"watermark":25}
neg-expected-watermark-never-emitted|after input 1: expected {"watermark":20} but got nothing
neg-watermark-in-wrong-group|after input 0: unexpected {"watermark":0}
neg-status-before-flush|after input 3: expected {"status":"idle"} but got {"watermark":5}
neg-missing-join-pair|after input 2: unexpected {"left":{"key":"k","ts":5,"value":
neg-join-wrong-value|"value":11},"ts":5} but got {"left":{"key":"k","ts":5,"value":1},"right":{"key":"k","ts":5,"value":10},"ts":5}
neg-late-dropped-counter|counter late_dropped: expected 0 but got 1
neg-late-wrong-side|after input 2: expected {"late":{"key":"k","ts":3,"value":1},"side":"right"} but got {"late":{"key":"k","ts":3,"value":1},"side":"left"}
neg-missing-window-result|after input 1: unexpected {"key":"a","window":[0,10],"value":1,"ts":9}
neg-result-listed-after-watermark|after input 1: expected {"key":"a","window":[0,10],"value":1,"ts":9} after {"watermark":9} but got it before
neg-source-out-of-order|expected {"watermark":2} after input 2 but got {"watermark":1} after input 1
neg-unknown-trigger-type|unsupported trigger type "sometimes"
neg-unknown-strategy|unsupported watermark strategy "psychic"
neg-unknown-window-type|unsupported window type "hopping"
neg-unknown-aggregate-fn|unsupported aggregate fn "median"
neg-unknown-input-kind|unsupported input kind "checkpoint"
neg-unknown-pipeline-field|unsupported field "parallelism" in pipeline
neg-unknown-output-field|unsupported field "pane" in an output item
neg-unknown-counter|unsupported counter "late_emitted"
neg-malformed-json|invalid JSON: unexpected token near ']' (line 4
neg-live-watermark-goes-back|after input 4: expected {"watermark":6999} but got nothing
neg-live-set-both-settings|a set item has exactly one of
neg-fallback-before-its-interval|expected {"watermark":300} after input 2 but got {"watermark":500} after input 3
neg-fallback-outside-a-source|unsupported field "fallback" in pipeline.watermark of a window pipeline
neg-live-lateness-outside-a-window|"allowed_lateness" in a window pipeline, and only there
neg-live-lateness-lowered-still-refires|after input 3: expected {"key":"k","window":[10000,20000],"value":36,"ts":19999} but got nothing
EOF

# ---- A correct control vector passes ----
cat >"$tmp/control.json" <<'EOF'
{"name": "control", "origin": "selftest", "description": "two channels",
 "pipeline": {"channels": 2},
 "input": [{"kind": "watermark", "ts": 5, "channel": 0},
           {"kind": "watermark", "ts": 2, "channel": 1},
           {"kind": "watermark", "ts": 9, "channel": 1},
           {"kind": "end"}],
 "expect": {"output": [{"after": 1, "watermark": 2},
                       {"after": 2, "watermark": 5},
                       {"after": 3, "watermark": 9223372036854775807}]}}
EOF
"$runner" "$tmp/control.json" >"$tmp/out" 2>&1
rc=$?
[ "$rc" -eq 0 ] || bad "control vector: exit $rc (want 0): $(cat "$tmp/out")"
grep -qx 'PASS control' "$tmp/out" || bad "control vector did not pass"
grep -qx '1 passed, 0 failed' "$tmp/out" || bad "control: bad closing line"

# ---- A path that does not exist fails ----
"$runner" "$tmp/missing.json" >"$tmp/out" 2>&1
rc=$?
[ "$rc" -eq 1 ] || bad "missing file: exit $rc (want 1)"
grep -q '^FAIL missing: ' "$tmp/out" || bad "missing file: no FAIL line"

# ---- No path is a usage error ----
"$runner" >/dev/null 2>&1
rc=$?
[ "$rc" -eq 2 ] || bad "no arguments: exit $rc (want 2)"

if [ "$errors" -ne 0 ]; then
    echo "selftest: $errors problem(s)" >&2
    exit 1
fi
echo "selftest: ok"
