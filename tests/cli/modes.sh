#!/bin/sh
# modes.sh - the output modes of refired windows (append, upsert to a file
# and to stdout, retract) through the CLI at parallelism 1, 2 and 4,
# compared with tests/cli/expected/modes.* (derived in modes.md).
# Usage: modes.sh TIDEMARK SOURCE_DIR
. "$(dirname "$0")/lib.sh"
setup "$@"

for p in 1 2 4; do
    for mode in append upsert retract; do
        expect_exit "modes $mode -p $p" 0 "$TM" run tests/cli/jobs/modes.yaml \
            -p "$p" -q --set windows.w.output_mode="$mode" \
            --set sinks.out.path="$T/out.jsonl" \
            --set sinks.late.path="$T/late.jsonl"
        same_multiset "modes $mode -p $p results" "$EXP/modes.$mode.jsonl" \
            "$T/out.jsonl"
        same_multiset "modes $mode -p $p late" "$EXP/modes.late.jsonl" \
            "$T/late.jsonl"
        expect_in "modes $mode -p $p summary" "$T/err" \
            'late records: 0 dropped, 1 to the late output, 3 late refires'
    done
    expect_exit "modes upsert to stdout -p $p" 0 "$TM" run \
        tests/cli/jobs/modes.yaml -p "$p" -q \
        --set windows.w.output_mode=upsert --set sinks.out.type=stdout \
        --set sinks.late.path="$T/late.jsonl"
    same_multiset "modes upsert to stdout -p $p" \
        "$EXP/modes.upsert-stdout.jsonl" "$T/out"
done
