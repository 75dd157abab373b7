#!/bin/sh
# examples.sh - runs one of the annotated jobs in examples/ through the CLI
# at parallelism 1, 2 and 4 and compares its outputs (results, late
# records, dead letters, summary counters) with the expected files in
# tests/cli/expected/, derived by hand in the .md file of the same name.
# Sinks that write to out/ are redirected into a temporary folder with
# --set, which also tests --set.
# Usage: examples.sh TIDEMARK SOURCE_DIR uv|uv-lateness0|clicks10s|
#                    orders_payments|idle
. "$(dirname "$0")/lib.sh"
setup "$1" "$2"
name=$3

# run_uv P [--set ...]: runs examples/uv.yaml with its three sinks in $T.
run_uv() {
    p=$1
    shift
    expect_exit "uv -p $p" 0 "$TM" run examples/uv.yaml --parallelism "$p" \
        --quiet --set sinks.results.path="$T/uv.jsonl" \
        --set sinks.late.path="$T/late.jsonl" \
        --set sinks.bad.path="$T/bad.jsonl" "$@"
}

case "$name" in
uv)
    for p in 1 2 4; do
        run_uv "$p"
        same_multiset "uv -p $p results" "$EXP/uv.results.jsonl" "$T/uv.jsonl"
        same_multiset "uv -p $p late" "$EXP/uv.late.jsonl" "$T/late.jsonl"
        check_dead "uv -p $p dead letters" "$EXP/uv.bad.tsv" "$T/bad.jsonl"
        expect_in "uv -p $p summary" "$T/err" \
            '16 records in, 6 rows out'
        expect_in "uv -p $p summary" "$T/err" \
            'late records: 0 dropped, 1 to the late output, 1 late refires;'
        expect_in "uv -p $p summary" "$T/err" \
            '1 bad record dead-lettered; 0 timestamp guard hits'
    done
    ;;
uv-lateness0)
    for p in 1 2 4; do
        run_uv "$p" --set windows.uv.allowed_lateness=0
        same_multiset "uv lateness 0 -p $p results" \
            "$EXP/uv-lateness0.results.jsonl" "$T/uv.jsonl"
        same_multiset "uv lateness 0 -p $p late" \
            "$EXP/uv-lateness0.late.jsonl" "$T/late.jsonl"
        check_dead "uv lateness 0 -p $p dead letters" "$EXP/uv.bad.tsv" \
            "$T/bad.jsonl"
        expect_in "uv lateness 0 -p $p summary" "$T/err" \
            '16 records in, 5 rows out'
        expect_in "uv lateness 0 -p $p summary" "$T/err" \
            'late records: 0 dropped, 2 to the late output, 0 late refires'
    done
    ;;
clicks10s)
    for p in 1 2 4; do
        expect_exit "clicks10s -p $p" 0 "$TM" run examples/clicks10s.yaml \
            -p "$p" -q
        same_multiset "clicks10s -p $p results (stdout)" \
            "$EXP/clicks10s.results.jsonl" "$T/out"
        expect_in "clicks10s -p $p summary" "$T/err" \
            '25 records in, 11 rows out'
    done
    ;;
orders_payments)
    for p in 1 2 4; do
        expect_exit "orders_payments -p $p" 0 "$TM" run \
            examples/orders_payments.yaml -p "$p" -q \
            --set sinks.late.path="$T/late.jsonl"
        same_multiset "orders_payments -p $p pairs (stdout)" \
            "$EXP/orders_payments.results.jsonl" "$T/out"
        same_multiset "orders_payments -p $p late" /dev/null "$T/late.jsonl"
        expect_in "orders_payments -p $p summary" "$T/err" \
            '12 records in, 4 rows out'
    done
    ;;
idle)
    # Whether the silent partition is declared idle in time depends on the
    # machine's speed (processing time), so only what holds either way is
    # checked: the job ends, every generated record is either counted in
    # exactly one window or in the late output (lateness is 0), and with
    # 4 partitions of 200,000 records the silent one (partition 3 after
    # the first minute, 60,000 records of 1,000/s spread over 4
    # partitions = 15,000 of its own) loses 50,000 - 15,000 = 35,000.
    for p in 1 2 4; do
        for idle in 100ms 0; do
            expect_exit "idle -p $p idle_timeout $idle" 0 "$TM" run \
                examples/idle.yaml -p "$p" -q \
                --set sources.clicks.generator.records=200000 \
                --set sources.clicks.watermark.idle_timeout="$idle" \
                --set sinks.results.path="$T/idle.jsonl" \
                --set sinks.late.path="$T/late.jsonl"
            expect_in "idle -p $p summary" "$T/err" '165,000 records in'
            counted=$(sed -E 's/.*"clicks":([0-9]+).*/\1/' "$T/idle.jsonl" |
                awk '{ s += $1 } END { print s + 0 }')
            late=$(wc -l <"$T/late.jsonl")
            if [ $((counted + late)) != 165000 ]; then
                fail "idle -p $p: $counted counted + $late late != 165000"
            fi
        done
    done
    ;;
*)
    fail "unknown example $name"
    ;;
esac
