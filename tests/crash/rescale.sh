#!/bin/sh
# SPDX-License-Identifier: MIT
# rescale.sh - the differential test of restarts at another parallelism
# and of fresh starts (issue 18; docs/checkpoints.md, "Rescaling and
# fresh starts").
#
# The job of kill_diff.sh (tests/crash/job.yaml) over one file per source,
# so that its output does not depend on the parallelism (below).  The
# golden output: a run without checkpoints at parallelism 1, repeated at
# parallelism 4.  Then TRIALS trials, each a lineage of runs with
# checkpoints: 1 to 6 interruptions (a kill -9 drawn as in kill_diff.sh,
# or a stop with SIGINT), every run at a parallelism drawn from 1 to 4,
# then runs until one completes and one more.  A third of the trials
# then start over with --from-scratch, killed at random points (the kills
# inside the protocol also land in the move of the old output aside),
# each next command drawn as a plain restart or another --from-scratch,
# until one completes.
#
# Checks after each trial: the visible parts of every sink, in name
# order, equal the golden output as multisets and per key and window in
# order (grouped as in kill_diff.sh: a key's rows move between writers
# when the parallelism changes, so per-writer order is not enough; the
# retract-mode sink's rows must come in an order that applies); after a
# fresh start also the oldest "replaced" folder holds exactly the golden
# output (the complete first lineage, moved aside, never deleted).
#
# Determinism at any parallelism: with one file per source, one source
# subtask reads everything and the others have no partitions, so every
# window subtask sees the watermark of that one channel, in order with
# its records; what is late and when windows fire is the same at 1 and
# at 4 (the golden run's second pass checks it).
#
# Usage: rescale.sh TIDEMARK SOURCE_DIR CRASH_TOOL
# Environment: TDM_RESCALE_TRIALS (default 48; 16 under a timeout
# multiplier above 1), TDM_RESCALE_SEED (the first trial's seed, default
# 1), TDM_RESCALE_ONLY=SEED (just that trial), TDM_KILL_RECORDS (records
# per click file, default 20000).
. "$(dirname "$0")/start.sh"

mult=${TDM_TEST_TIMEOUT_MULTIPLIER:-1}
trials=48
if [ "$mult" -gt 1 ]; then
    trials=16
fi
trials=${TDM_RESCALE_TRIALS:-$trials}
seed0=${TDM_RESCALE_SEED:-1}
if [ -n "${TDM_RESCALE_ONLY:-}" ]; then
    seed0=$TDM_RESCALE_ONLY
    trials=1
fi

JOB_SET="--set sources.clicks.path=data/clicks-0.jsonl
--set sources.orders.path=data/orders-0.jsonl
--set sources.payments.path=data/payments-0.jsonl"
make_input "${TDM_KILL_RECORDS:-20000}"
make_golden 4

# draw_p: a parallelism from 1 to 4 in $p.
draw_p() {
    rnd 4
    p=$((R + 1))
}

# trial_fail WHAT: reports the trial and its log, and fails.
trial_fail() {
    tail -n 40 "$T/run.err" >&2
    echo "seed $seed:$list" >&2
    echo "reproduce: TDM_RESCALE_ONLY=$seed sh tests/crash/rescale.sh" \
        "TIDEMARK . CRASH_TOOL" >&2
    fail "seed $seed: $1"
}

# lineage N: N interruptions (kills or stops) of runs at random
# parallelism, then runs until one completes (a run that completes
# early ends the interruptions).
lineage() {
    i=0
    while [ $i -lt "$1" ]; do
        i=$((i + 1))
        draw_p
        rnd 4
        if [ $R = 0 ]; then
            rnd 150
            spec="stop:$((R + 5))"
        else
            draw_kill
        fi
        invoke "$spec" --parallelism $p
        list="$list $spec@p$p"
        if [ "$rc" = 0 ] && ! stopped "$spec"; then
            list="$list(completed)"
            return 0
        fi
        [ "$rc" = 137 ] || stopped "$spec" ||
            trial_fail "exit code $rc after$list"
    done
    draw_p
    invoke "" --parallelism $p
    list="$list end@p$p"
    [ "$rc" = 0 ] || trial_fail "the run to the end failed with $rc"
}

# fresh N: --from-scratch killed, then N - 1 commands drawn as plain
# restarts or --from-scratch (killed too), then one without a fault
# that must complete.
fresh() {
    i=0
    cmd="--from-scratch"
    while [ $i -lt "$1" ]; do
        i=$((i + 1))
        draw_p
        draw_kill
        invoke "$spec" --parallelism $p $cmd
        list="$list ${cmd:+fresh:}$spec@p$p"
        [ "$rc" = 137 ] || [ "$rc" = 0 ] ||
            trial_fail "exit code $rc after$list"
        rnd 2
        if [ $R = 0 ]; then cmd="--from-scratch"; else cmd=""; fi
    done
    draw_p
    invoke "" --parallelism $p $cmd
    list="$list ${cmd:+fresh:}end@p$p"
    [ "$rc" = 0 ] || trial_fail "the last run failed with $rc"
}

n_fresh=0
n_moved=0
r=0
while [ $r -lt "$trials" ]; do
    seed=$((seed0 + r))
    r=$((r + 1))
    seed_rnd "$seed"
    rm -rf out ck
    : >"$T/run.err"
    list=""
    rnd 6
    lineage $((R + 1))
    draw_p
    invoke "" --parallelism $p
    list="$list again@p$p"
    [ "$rc" = 0 ] || trial_fail "the run after the end failed with $rc"
    check_all "seed $seed" || trial_fail "the committed output differs"
    rnd 3
    if [ $R = 0 ]; then
        n_fresh=$((n_fresh + 1))
        rnd 3
        fresh $((R + 1))
        check_all "seed $seed, after the fresh start" ||
            trial_fail "the committed output differs after a fresh start"
        first=$(ls -d out/results.jsonl.replaced-* 2>/dev/null | head -n 1)
        first=${first##*-}
        if [ -n "$first" ]; then
            n_moved=$((n_moved + 1))
            check_all "seed $seed, the output the fresh start replaced" \
                "$first" || trial_fail "the replaced output is not whole"
        fi
    fi
    echo "trial $r (seed $seed):$list - ok"
done
[ "$trials" -lt 8 ] || [ "$n_moved" -gt 0 ] ||
    fail "no fresh start moved output aside: the test missed its point"
echo "ok: $trials trials ($n_fresh with fresh starts, $n_moved of them" \
    "moved the old output aside); kills drawn: $n_proto in the" \
    "checkpoint/commit protocol, $n_write at a write, $n_delay after a delay"
