#!/bin/sh
# SPDX-License-Identifier: MIT
# cumulate.sh - cumulate windows (Flink's CUMULATE) in a YAML job: the
# rows and the late output of tests/cli/jobs/cumulate.yaml at parallelism
# 1, 2 and 4, compared with tests/cli/expected/cumulate*.jsonl (derived
# in cumulate.md), then the window keys cumulate refuses and is refused
# with: a size that is not a multiple of the step, a step on another
# window type, a slide or a missing step on a cumulate window; each
# names the file, line and column of the key.
# Usage: cumulate.sh TIDEMARK SOURCE_DIR
. "$(dirname "$0")/lib.sh"
setup "$@"

for p in 1 2 4; do
    expect_exit "cumulate -p $p" 0 "$TM" run tests/cli/jobs/cumulate.yaml \
        -p "$p" -q --set sinks.out.path="$T/out.jsonl" \
        --set sinks.late.path="$T/late.jsonl"
    same_multiset "cumulate -p $p results" "$EXP/cumulate.jsonl" \
        "$T/out.jsonl"
    same_multiset "cumulate -p $p late" "$EXP/cumulate.late.jsonl" \
        "$T/late.jsonl"
    expect_in "cumulate -p $p summary" "$T/err" \
        'late records: 0 dropped, 1 to the late output, 3 late refires'
done

# An offset of 5 s moves the max windows to [-25000, 5000), [5000,
# 35000), [35000, 65000); the 10 s steps with them.  Key b's records
# (15000, 33000, 12000) then all lie in [5000, 35000): 15000 and 12000
# in [5000, 25000) and [5000, 35000), 33000 in [5000, 35000) only, and
# 12000 comes after the watermark 54999 closed them all: late.  So is
# a@3000, whose one window, [-25000, 5000), was cleaned up at 14999,
# long before the watermark 32999 it comes under.
expect_exit "cumulate offset" 0 "$TM" run tests/cli/jobs/cumulate.yaml \
    -q --set windows.w.window.offset=5s \
    --set sinks.out.path="$T/off.jsonl" --set sinks.late.path="$T/offlate.jsonl"
grep '"k":"b"' "$T/off.jsonl" | sed 's/,"timing".*//' >"$T/off.b" || true
printf '%s\n' \
    '{"k":"b","n":1,"total":2,"window_start":5000,"window_end":25000' \
    '{"k":"b","n":2,"total":8,"window_start":5000,"window_end":35000' \
    >"$T/off.want"
same_multiset "cumulate offset, key b" "$T/off.want" "$T/off.b"
printf '%s\n' '{"k":"a","v":7,"ts":3000}' '{"k":"b","v":9,"ts":12000}' \
    >"$T/offlate.want"
same_multiset "cumulate offset late" "$T/offlate.want" "$T/offlate.jsonl"

# at FILE LINE KEY: "FILE:LINE:COLUMN" where COLUMN is where the value
# of flow-map key KEY ("KEY: value") starts on that line (1-based).
at() {
    col=$(sed -n "${2}p" "$1" |
        awk -v t="$3: " '{ print index($0, t) + length(t) }')
    printf '%s:%s:%s' "$1" "$2" "$col"
}
# refused CASE WINDOW KEY TEXT: the job with window line WINDOW (line 15)
# fails `tidemark validate` with exit 3, and stderr has TEXT at the
# file, line and column of KEY's value in that line.
refused() {
    sed "15s/window: .*/window: $2/" tests/cli/jobs/cumulate.yaml \
        >"$T/$1.yaml"
    expect_exit "$1" 3 "$TM" validate "$T/$1.yaml"
    expect_in "$1" "$T/err" "$(at "$T/$1.yaml" 15 "$3"): windows.w.window"
    expect_in "$1" "$T/err" "$4"
}
refused multiple "{type: cumulate, size: 30s, step: 7s}" "size" \
    "window.size: must be an integral multiple of window.step (got 30000 ms for a step of 7000 ms)"
refused step_on_tumbling "{type: tumbling, size: 30s, step: 10s}" "step" \
    "window.step: only used with window.type: cumulate"
refused step_on_sliding "{type: sliding, size: 30s, slide: 10s, step: 10s}" \
    "step" "window.step: only used with window.type: cumulate"
refused slide_on_cumulate "{type: cumulate, size: 30s, step: 10s, slide: 10s}" \
    "slide" "window.slide: not used with window.type: cumulate"
refused gap_on_cumulate "{type: cumulate, size: 30s, step: 10s, gap: 10s}" \
    "gap" "window.gap: only used with window.type: session, not cumulate"
refused big_offset "{type: cumulate, size: 30s, step: 10s, offset: 30s}" \
    "offset" "window.offset: must be smaller than window.size in magnitude"
# A missing step is an error of the window (no key to point at).
sed "15s/window: .*/window: {type: cumulate, size: 30s}/" \
    tests/cli/jobs/cumulate.yaml >"$T/no_step.yaml"
expect_exit no_step 3 "$TM" validate "$T/no_step.yaml"
expect_in no_step "$T/err" "window.step: required for cumulate windows"
echo "cumulate: ok"
