#!/bin/sh
# SPDX-License-Identifier: MIT
# kill_diff.sh - the kill -9 differential test of issue 8
# (docs/checkpoints.md, "Differential kill test").
#
# A fixed seeded input (crash_tool gen: four click files with
# out-of-order and late records, an idle gap and a file that ends early;
# orders and payments for a window join; malformed lines in every file)
# runs through tests/crash/job.yaml once without checkpoints and without
# faults: the golden outputs.  Then RUNS runs with checkpoints, each
# killed 1 to 10 times with SIGKILL and restarted with the same command
# (resuming from the newest checkpoint) until it completes, then run once
# more.  Kill moments come from a seed per run: about a third inside
# checkpoint writes and sink commits (TDM_FIO_FAULT=KIND:N:KILL for
# rename, fsync, mkdir, unlink with a small N), a third at the N-th
# write(2) of the process (sink flushes and checkpoint blobs), a third
# after a random delay (crash_tool kill-after).  A quarter of the runs
# are also stopped once with SIGINT at a random moment (on_cancel auto:
# stop, the open windows go into the final checkpoint) and restarted.
# Every sink's committed
# output (its visible parts, in part order) must equal the golden output
# as a multiset and in order per key and window: each sink's rows are
# grouped by key (and window) with a stable sort, and the grouped text
# must be identical.
#
# Determinism.  What is late, when windows fire and the order of rows per
# key and window must not depend on thread timing, or the golden run
# would not repeat: parallelism 1 (each window reads one source subtask),
# watermarks on every record, idleness off (idle gaps are stretches of
# event time without records, not wall-clock silence), and no late
# records in the join's inputs (a record of one join side that is late
# for its own partition may or may not be late for the join's combined
# watermark, depending on how far the other side's thread got).  The
# golden run is made twice and must repeat.
#
# Usage: kill_diff.sh TIDEMARK SOURCE_DIR CRASH_TOOL
# Environment: TDM_KILL_RUNS (default 50; 20 under a timeout multiplier
# above 1, as in the sanitizer build),
# TDM_KILL_SEED (the first run's seed, default 1; run r has seed
# TDM_KILL_SEED + r - 1), TDM_KILL_ONLY=SEED (just that run: how to
# reproduce a failure), TDM_KILL_RECORDS (records per click file, default
# 20000).  Outputs go to a folder under /dev/shm when it is writable
# (checkpoint fsyncs cost nothing there) unless TMPDIR is set.
# The start (TMPDIR, setup, TOOL, JOB, lib.sh, cd $T/w): start.sh; the
# invocation and the kills drawn: lib.sh.
. "$(dirname "$0")/start.sh"

mult=${TDM_TEST_TIMEOUT_MULTIPLIER:-1}
runs=50
if [ "$mult" -gt 1 ]; then
    runs=20
fi
runs=${TDM_KILL_RUNS:-$runs}
seed0=${TDM_KILL_SEED:-1}
if [ -n "${TDM_KILL_ONLY:-}" ]; then
    seed0=$TDM_KILL_ONLY
    runs=1
fi

make_input "${TDM_KILL_RECORDS:-20000}"
make_golden

total_kills=0
n_stops=0
r=0
while [ $r -lt "$runs" ]; do
    seed=$((seed0 + r))
    r=$((r + 1))
    seed_rnd "$seed"
    rnd 10
    want=$((R + 1))
    # A quarter of the runs are also stopped once with SIGINT (a
    # graceful cancel: the final checkpoint keeps the open windows),
    # before kill number stop_at.
    rnd 4
    stop_at=-1
    stop_ms=0
    if [ $R = 0 ]; then
        rnd "$want"
        stop_at=$R
        rnd 150
        stop_ms=$((R + 5))
    fi
    rm -rf out ck
    : >"$T/run.err"
    kills=0
    list=""
    tries=0
    while [ $kills -lt $want ]; do
        if [ $kills = $stop_at ]; then
            spec="stop:$stop_ms"
            stop_at=-1
        else
            draw_kill
        fi
        invoke "$spec"
        if [ "$rc" = 137 ]; then
            kills=$((kills + 1))
            list="$list $spec"
        elif stopped "$spec"; then
            # Stopped (or interrupted before the handler was set up).
            list="$list $spec"
            n_stops=$((n_stops + 1))
        elif [ "$rc" = 0 ]; then
            list="$list ($spec: completed first)"
            [ $kills -eq 0 ] || break
            # Not killed at all yet: start this run over.
            tries=$((tries + 1))
            [ $tries -lt 20 ] || fail "seed $seed: 20 kills missed in a row"
            rm -rf out ck
        else
            tail -n 30 "$T/run.err" >&2
            fail "seed $seed: exit code $rc after kills:$list $spec"
        fi
    done
    invoke ""
    if [ "$rc" != 0 ]; then
        tail -n 30 "$T/run.err" >&2
        fail "seed $seed: the last run failed with $rc after kills:$list"
    fi
    if ! check_all "seed $seed"; then
        echo "seed $seed, $kills kills:$list" >&2
        echo "reproduce: TDM_KILL_ONLY=$seed sh tests/crash/kill_diff.sh" \
            "TIDEMARK . CRASH_TOOL" >&2
        tail -n 40 "$T/run.err" >&2
        exit 1
    fi
    total_kills=$((total_kills + kills))
    echo "run $r (seed $seed): $kills kills:$list - ok"
done
echo "ok: $runs runs, $total_kills kills (drawn: $n_proto in the" \
    "checkpoint/commit protocol, $n_write at a write, $n_delay after a" \
    "delay), $n_stops stops with SIGINT"
