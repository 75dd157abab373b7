#!/bin/sh
# SPDX-License-Identifier: MIT
# checkpoint.sh - checkpoints end to end (docs/checkpoints.md, "In the
# runtime"): a job with checkpoint.dir run to completion writes exactly
# the output of a run without (its visible part files, concatenated in
# name order); killed with kill -9 once mid-run and restarted, it resumes
# from its newest checkpoint and the visible output is again exactly the
# uninterrupted run's (results and late records, in order); --from-scratch
# starts over; SIGUSR1 takes a savepoint; stdin is refused.
# (The differential kill test - 50 runs with 1 to 10 kills each - is
# still to come.)
# Usage: checkpoint.sh TIDEMARK SOURCE_DIR
. "$(dirname "$0")/lib.sh"
setup "$@"

# A generator with out-of-order and late records, aggregated per user in
# 10 s windows (count and row aggregates: distinct pages, first/last
# page, latest ts); on-event watermarks, so which records are late does not
# depend on when periodic ticks run and the golden run repeats exactly.
job() { # job FILE OUTDIR CKDIR RECORDS
    ck=""
    if [ -n "$3" ]; then
        ck="checkpoint: {dir: $3, interval: 20ms}"
    fi
    cat >"$1" <<YAML
name: ck
parallelism: 1
$ck
sources:
  in:
    type: generator
    generator: {records: $4, partitions: 4, rate: 1000000000, keys: 50,
                max_delay: 2s, late_fraction: 0.01, late_delay: 30s}
    watermark: {max_out_of_orderness: 1s, emit: on_event}
windows:
  w:
    from: in
    key_by: user
    window: {type: tumbling, size: 10s}
    aggregates: "count() as n, count_distinct(page) as pages, first(page) as fp, last(page) as lp, max(ts) as hi"
    sink: out
    late_output: late
sinks:
  out: {type: file, path: $2/out.jsonl}
  late: {type: file, path: $2/late.jsonl}
YAML
}

mkdir "$T/gold" "$T/a" "$T/b"
job "$T/gold.yaml" "$T/gold" "" 3000000
expect_exit "golden run" 0 "$TM" run "$T/gold.yaml" --quiet
[ -s "$T/gold/late.jsonl" ] || fail "the golden run has no late records"

# visible OUTDIR BASE: the visible parts of writer 0, in name order.
visible() {
    ls "$1" | grep -E "^$2\\.part-0-[0-9]{10}\$" | sort |
        while read -r f; do cat "$1/$f"; done
}
check() { # check WHAT OUTDIR
    visible "$2" out.jsonl >"$T/got.out"
    visible "$2" late.jsonl >"$T/got.late"
    cmp -s "$T/gold/out.jsonl" "$T/got.out" ||
        fail "$1: results differ from the uninterrupted run's"
    cmp -s "$T/gold/late.jsonl" "$T/got.late" ||
        fail "$1: late records differ from the uninterrupted run's"
}

# 1. To completion with checkpoints: the same output.
job "$T/a.yaml" "$T/a" "$T/cka" 3000000
expect_exit "checkpointed run" 0 "$TM" run "$T/a.yaml" --quiet
expect_in "summary" "$T/err" "tidemark: checkpoints:"
check "checkpointed run" "$T/a"
[ ! -e "$T/a/out.jsonl" ] || fail "out.jsonl written although checkpointed"

# 2. kill -9 once, after the second checkpoint, then resume.
job "$T/b.yaml" "$T/b" "$T/ckb" 3000000
"$TM" run "$T/b.yaml" --quiet 2>"$T/b.err" &
pid=$!
n=0
while [ ! -d "$T/ckb/chk-0000000002" ]; do
    kill -0 "$pid" 2>/dev/null || fail "the run ended before its 2nd checkpoint"
    n=$((n + 1))
    [ $n -lt 6000 ] || fail "no 2nd checkpoint after 60 s"
    sleep 0.01
done
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
expect_exit "resumed run" 0 "$TM" run "$T/b.yaml" --quiet
expect_in "resume" "$T/err" "checkpoint: resuming from checkpoint"
check "killed and resumed" "$T/b"

# 3. A run after completion resumes from the final checkpoint: nothing
# more is read or written.
expect_exit "run again" 0 "$TM" run "$T/b.yaml" --quiet
expect_in "nothing more" "$T/err" "0 records in, 0 rows out"
check "run again" "$T/b"

# 4. --from-scratch: the sinks replace what earlier runs left.
expect_exit "from scratch" 0 "$TM" run "$T/b.yaml" --quiet --from-scratch
expect_in "from scratch" "$T/err" "3,000,000 records in"
check "from scratch" "$T/b"

# 5. SIGUSR1 takes a savepoint.
mkdir "$T/c"
job "$T/c.yaml" "$T/c" "$T/ckc" 20000000
"$TM" run "$T/c.yaml" --quiet 2>"$T/c.err" &
pid=$!
n=0
while [ ! -d "$T/ckc/chk-0000000001" ]; do
    n=$((n + 1))
    [ $n -lt 6000 ] || fail "no checkpoint after 60 s"
    sleep 0.01
done
kill -USR1 "$pid"
wait "$pid" || fail "the run with a savepoint failed"
expect_in "savepoint" "$T/c.err" "savepoint"

# 6. Unreplayable sources are refused.
cat >"$T/stdin.yaml" <<YAML
checkpoint: {dir: $T/ckd}
sources:
  in: {type: stdin, schema: {k: string}, time: ingestion, sink: out}
sinks:
  out: {type: stdout}
YAML
expect_exit "stdin refused" 3 "$TM" run "$T/stdin.yaml" --quiet </dev/null
expect_in "stdin refused" "$T/err" "cannot be replayed"
echo "ok"
