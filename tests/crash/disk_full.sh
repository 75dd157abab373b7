#!/bin/sh
# SPDX-License-Identifier: MIT
# disk_full.sh - disk full end to end (issue 8; docs/checkpoints.md,
# "Differential kill test" and "Failures").
#
# The crash tests' job (tests/crash/job.yaml, input from crash_tool gen)
# runs with checkpoints every 10 ms while the N-th write(2) fails with
# ENOSPC (TDM_FIO_FAULT=write:N:ENOSPC), for N = 1, 2, ... WRITES, then
# the same for the N-th fsync (1 .. FSYNCS).  The bounds reach past the
# second checkpoint's blobs and the sinks' pre-commits and commits that
# go with it (about 20 writes and 40 fsyncs per checkpoint).  The runs
# tolerate one failed checkpoint (checkpoint.tolerable_failed: 1; with
# the default 0 a failed checkpoint fails the run, as cli.ckpt_fail
# checks, and a restart strategy brings it back).  Each run must either
# complete, with the failed checkpoint counted and a later one
# completed, or fail with exit code 1; either way the ENOSPC must be
# reported in a message that names the path ("write ck/chk-.../o0-0: No
# space left on device", "fsync out: ..."), and every chk-<id> left in
# the checkpoint directory must be complete (crash_tool verify reads the
# manifests and blobs independently of the store).  Then the space
# "returns": the same command without the fault resumes and completes,
# its committed output equals the golden run's (as kill_diff.sh checks
# it: multisets, and order per key and window), and no temporary
# checkpoint directory is left.
#
# Regression (found by this test): a write that failed between two
# checkpoints (a sink's buffer reaching its part file) failed the run
# with "sink "pairs": writing a result to out/pairs.jsonl failed", naming
# neither the part file nor the reason; the message now ends with the
# sink's own error ("(write out/.pairs.jsonl.part-0.inprogress: No space
# left on device)"), which ENOSPC_RE below requires.
#
# Usage: disk_full.sh TIDEMARK SOURCE_DIR CRASH_TOOL
# Environment: TDM_DISK_FULL_WRITES (default 60), TDM_DISK_FULL_FSYNCS
# (default 100), TDM_DISK_FULL_STEP (N goes up by this; default 1, and
# TDM_TEST_TIMEOUT_MULTIPLIER when that is above 1, as in the sanitizer
# build, where every run is several times slower), TDM_KILL_RECORDS
# (records per click file, default 20000).
# The start (TMPDIR, setup, TOOL, JOB, lib.sh, cd $T/w): start.sh.
. "$(dirname "$0")/start.sh"

make_input "${TDM_KILL_RECORDS:-20000}"
make_golden

# verify_ck WHAT: every chk-<id> in ck/ is complete; sets n_valid, n_tmp.
verify_ck() {
    if ! "$TOOL" verify ck >"$T/verify" 2>&1; then
        cat "$T/verify" >&2
        fail "$1: a partial checkpoint was left"
    fi
    read -r n_valid n_tmp <"$T/verify"
}

step=${TDM_TEST_TIMEOUT_MULTIPLIER:-1}
step=${TDM_DISK_FULL_STEP:-$step}
ENOSPC_RE='(ck|out)(/[^ :]*)?: No space left on device'

# The regression named above, on its own: with no checkpoint before the
# end (1 h interval), the first write is a sink's buffer going to its
# in-progress part: usually pairs', which fills 64 KiB first, but the
# window subtasks run on their own threads, and under load the upsert
# sink's changelog part (out/.upserts.jsonl.changelog.part-0.inprogress)
# was written first once; either names the part and the reason.
rm -rf out ck
expect_exit "a write between checkpoints fails" 1 \
    env TDM_FIO_FAULT=write:1:ENOSPC "$TM" run "$JOB" --quiet \
    --set checkpoint.dir=ck --set checkpoint.interval=1h
part_re='out/\.[a-z_]+\.jsonl(\.changelog)?\.part-0\.inprogress'
expect_re='writing a result to out/[a-z_]+\.jsonl failed \(write '
grep -E -q "$expect_re$part_re: No space left on device\\)" "$T/err" || {
    cat "$T/err" >&2
    fail "a failed write between checkpoints: the message does not name" \
        "the part file and the reason"
}
n_failed_runs=0
n_failed_ckpts=0
n_commit_retries=0
for kind in write fsync; do
    if [ $kind = write ]; then
        bound=${TDM_DISK_FULL_WRITES:-60}
    else
        bound=${TDM_DISK_FULL_FSYNCS:-100}
    fi
    n=1
    while [ $n -le "$bound" ]; do
        what="$kind:$n:ENOSPC"
        rm -rf out ck
        set +e
        TDM_FIO_FAULT=$what "$TM" run "$JOB" --quiet $CK_SET \
            --set checkpoint.tolerable_failed=1 >/dev/null 2>"$T/run.err"
        rc=$?
        set -e
        if [ "$rc" != 0 ] && [ "$rc" != 1 ]; then
            cat "$T/run.err" >&2
            fail "$what: exit code $rc (expected 0, or 1 with a message)"
        fi
        if ! grep -E -q "$ENOSPC_RE" "$T/run.err"; then
            cat "$T/run.err" >&2
            fail "$what: no message names the path that was full"
        fi
        if [ "$rc" = 1 ]; then
            n_failed_runs=$((n_failed_runs + 1))
            grep -E "$ENOSPC_RE" "$T/run.err" | grep -q -v "^tidemark: job" ||
                fail "$what: the failure is not explained"
        elif grep -q "^tidemark: checkpoint [0-9]* failed: " "$T/run.err"; then
            # Counted, and a later checkpoint completed.
            n_failed_ckpts=$((n_failed_ckpts + 1))
            grep -E -q "checkpoints: [1-9][0-9]* completed, 1 failed" \
                "$T/run.err" || {
                cat "$T/run.err" >&2
                fail "$what: the failed checkpoint is not counted, or" \
                    "none completed after it"
            }
        else
            # A sink's commit failed: logged, and retried by the next
            # checkpoint's.
            grep -q "commit of checkpoint [0-9]* failed" "$T/run.err" || {
                cat "$T/run.err" >&2
                fail "$what: completed, but neither a checkpoint nor a" \
                    "commit is reported failed"
            }
            n_commit_retries=$((n_commit_retries + 1))
        fi
        verify_ck "$what"
        # Space returns.
        set +e
        "$TM" run "$JOB" --quiet $CK_SET >/dev/null 2>"$T/rerun.err"
        rc=$?
        set -e
        if [ "$rc" != 0 ]; then
            cat "$T/rerun.err" >&2
            fail "$what: the run after space returned failed ($rc)"
        fi
        verify_ck "$what, then without the fault"
        [ "$n_valid" -ge 1 ] || fail "$what: no checkpoint after the rerun"
        [ "$n_tmp" = 0 ] ||
            fail "$what: temporary checkpoint directories left after a" \
                "clean run"
        if ! check_all "$what, then without the fault"; then
            echo "--- the run with the fault:" >&2
            cat "$T/run.err" >&2
            exit 1
        fi
        n=$((n + step))
    done
done
echo "ok: write and fsync N = 1..${TDM_DISK_FULL_WRITES:-60} and" \
    "1..${TDM_DISK_FULL_FSYNCS:-100} (step $step) failed with ENOSPC:" \
    "$n_failed_runs runs" \
    "failed with the path named, $n_failed_ckpts completed with a failed" \
    "checkpoint, $n_commit_retries with a commit retried; every rerun" \
    "equals the golden output"
