#!/bin/sh
# SPDX-License-Identifier: MIT
# ckpt_fail.sh - failed checkpoints and restarts end to end
# (docs/checkpoints.md, "Failures"; issue 18).  The checkpoint directory
# is made "full" with fault injection on mkdir, which in these runs only
# the checkpoint store calls (one per checkpoint: its temporary
# directory; the output and checkpoint directories exist beforehand):
# TDM_FIO_FAULT=mkdir:N-M:ENOSPC fails checkpoints N to M of the process,
# after which the disk has room again.  No timing decides an outcome but
# in the two tolerance cases, which need three periodic checkpoints before
# the input ends (the run is about 30 of them long at 10 ms; each checks
# its log says they happened).
#   1. By default a failed checkpoint fails the job: exit 1, the message
#      names the checkpoint and the cause; nothing is visible; run again
#      with room, the output is exactly the run without checkpoints'.
#   2. The final checkpoint (end of input) fails: exit 1, the output is
#      said to be pending and stays hidden; a run with room commits it.
#   3. restart.strategy fixed-delay brings the job back in the same
#      process once the disk has room: exit 0, the exact output.
#   4. A disk that stays full: the restarts give up, exit 1.
#   5. checkpoint.tolerable_failed 2: two failures in a row tolerated,
#      the exact output; three fail the job.
#   6. restart keys without checkpoint.dir are refused.
# The committed output of a sink is its visible parts (out/<name>.part-*;
# hidden .pending and in-progress parts ignored) in name order, compared
# with the golden run's file in order and as a multiset.
#   7. The REST API, the metrics and `tidemark diagnose` show them.
# Usage: ckpt_fail.sh TIDEMARK SOURCE_DIR [HTTP_GET]
. "$(dirname "$0")/lib.sh"
setup "$@"
HG=${3:-}

JOB=tests/cli/jobs/ckpt_fail.yaml

# tm_case FAULT DIR [ARG...]: runs the job with TDM_FIO_FAULT=FAULT (""
# for none), its output in DIR/out and its checkpoints in DIR/ck every
# $INTERVAL (10ms unless set), and the extra arguments (--set ...).
tm_case() {
    fault=$1 d=$2
    shift 2
    TDM_FIO_FAULT=$fault "$TM" run "$JOB" --quiet \
        --set "sinks.out.path=$d/out/out.jsonl" \
        --set "sinks.late.path=$d/out/late.jsonl" \
        --set "checkpoint.dir=$d/ck" \
        --set "checkpoint.interval=${INTERVAL:-10ms}" "$@"
}

# visible OUTDIR BASE: the committed parts of BASE, in name order.
visible() {
    ls "$1" | grep -F "$2.part-" | grep -v -e '^\.' -e '\.pending$' \
        -e '\.inprogress$' | sort | while read -r p; do cat "$1/$p"; done
}

# check WHAT OUTDIR: its committed output is exactly the golden run's.
check() {
    for b in out.jsonl late.jsonl; do
        visible "$2" "$b" >"$T/got"
        cmp -s "$T/gold/$b" "$T/got" ||
            fail "$1: $b differs from the run without checkpoints"
        same_multiset "$1: $b" "$T/gold/$b" "$T/got"
    done
}

# fresh NAME: an empty output and checkpoint directory for case NAME.
fresh() {
    mkdir "$T/$1" "$T/$1/out" "$T/$1/ck"
}

mkdir "$T/gold"
expect_exit "golden run" 0 "$TM" run "$JOB" --quiet \
    --set "sinks.out.path=$T/gold/out.jsonl" \
    --set "sinks.late.path=$T/gold/late.jsonl"
[ -s "$T/gold/late.jsonl" ] || fail "the golden run has no late records"

# 1. Default: the first failed checkpoint fails the job.
fresh d
expect_exit "full disk, default" 1 tm_case mkdir:1:ENOSPC:sticky "$T/d"
expect_in "default: the checkpoint" "$T/err" "tidemark: checkpoint 1 "
expect_in "default: the cause" "$T/err" \
    "failed: mkdir $T/d/ck/chk-0000000001.tmp-"
expect_in "default: the cause" "$T/err" "No space left on device"
expect_in "default: what to do" "$T/err" "make room in $T/d/ck"
expect_in "default: summary" "$T/err" "checkpoints: 0 completed, 1 failed"
[ -z "$(visible "$T/d/out" out.jsonl)" ] ||
    fail "default: output visible although no checkpoint completed"
expect_exit "default, run again with room" 0 tm_case "" "$T/d"
check "default, run again" "$T/d/out"

# 2. The final checkpoint fails: the output is pending, and says so.
fresh f
INTERVAL=1h # no periodic checkpoint: the final one is the first
expect_exit "final checkpoint fails" 1 tm_case mkdir:1:ENOSPC "$T/f"
expect_in "final: message" "$T/err" \
    "tidemark: checkpoint 1 at the end of input failed: mkdir"
expect_in "final: pending" "$T/err" "is pending (hidden .pending parts) and will be committed by a restart"
ls -a "$T/f/out" | grep -q '\.pending$' || fail "final: no pending part"
[ -z "$(visible "$T/f/out" out.jsonl)" ] ||
    fail "final: output visible although its checkpoint failed"
expect_exit "final, run again with room" 0 tm_case "" "$T/f"
check "final, run again" "$T/f/out"
INTERVAL=10ms

# 3. A restart strategy: three checkpoints fail (the first attempt's and
# two restarts'), then the disk has room and the third restart completes.
fresh r
expect_exit "restarted" 0 tm_case mkdir:1-3:ENOSPC "$T/r" \
    --set restart.strategy=fixed-delay --set restart.attempts=3 \
    --set restart.delay=0
expect_in "restart: logged" "$T/err" \
    "tidemark: restart 3 of 3 (restart.strategy fixed-delay) in 0 ms"
expect_in "restart: counted" "$T/err" "tidemark: restarted 3 times"
expect_in "restart: failures counted" "$T/err" "completed, 3 failed"
check "restarted" "$T/r/out"

# 4. The disk stays full: the restarts give up.
fresh g
expect_exit "gave up" 1 tm_case mkdir:1:ENOSPC:sticky "$T/g" \
    --set restart.strategy=exponential-delay --set restart.attempts=2 \
    --set restart.delay=0
expect_in "gave up: message" "$T/err" \
    "(restart.strategy exponential-delay gave up after 2 restarts in a row"
expect_in "gave up: summary" "$T/err" "checkpoints: 0 completed, 3 failed"

# 5. Tolerated failures: two in a row go on; a third fails the job.
fresh t
expect_exit "tolerated" 0 tm_case mkdir:1-2:ENOSPC "$T/t" \
    --set checkpoint.tolerable_failed=2
expect_in "tolerated: logged" "$T/err" \
    "(2 in a row, checkpoint.tolerable_failed 2: the job goes on"
expect_in "tolerated: summary" "$T/err" "completed, 2 failed"
check "tolerated" "$T/t/out"
fresh u
expect_exit "beyond tolerance" 1 tm_case mkdir:1-3:ENOSPC "$T/u" \
    --set checkpoint.tolerable_failed=2
expect_in "beyond: two tolerated first" "$T/err" "(2 in a row"
expect_in "beyond: message" "$T/err" \
    "3 failed in a row, more than checkpoint.tolerable_failed (2): the job fails"
expect_exit "beyond, run again with room" 0 tm_case "" "$T/u" \
    --set checkpoint.tolerable_failed=2
check "beyond tolerance, run again" "$T/u/out"

# 6. Settings that cannot apply are refused with the reason.
expect_exit "restart without checkpoints" 3 "$TM" run "$JOB" --quiet \
    --set restart.strategy=fixed-delay
expect_in "refused" "$T/err" "restart.strategy needs checkpoint.dir"
expect_exit "attempts without a strategy" 3 tm_case "" "$T/n" \
    --set restart.attempts=5
expect_in "refused" "$T/err" "restart.attempts applies to restart.strategy"
# 7. Surfaced: the REST API, the metrics and the diagnosis of a job whose
# checkpoints failed (one tolerated, the second fails it); the server
# lingers after the end, so nothing races.
fresh s
# Not through tm_case: $! must be tidemark's pid (a background subshell
# would ignore the SIGINT that ends the lingering).
TDM_FIO_FAULT=mkdir:1:ENOSPC:sticky "$TM" run "$JOB" --quiet \
    --set "sinks.out.path=$T/s/out/out.jsonl" \
    --set "sinks.late.path=$T/s/out/late.jsonl" \
    --set "checkpoint.dir=$T/s/ck" --set checkpoint.interval=10ms \
    --set checkpoint.tolerable_failed=1 \
    --http=127.0.0.1:0 --http-linger 2>"$T/s.err" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$T"' EXIT
n=0
until grep -q "still serving on port" "$T/s.err" 2>/dev/null; do
    n=$((n + 1))
    [ $n -le 600 ] || fail "surfaced: the run never ended: $(cat "$T/s.err")"
    sleep 0.05
done
url=$(sed -n 's/^tidemark: serving \(http:[^ ]*\) (job "ckfail")$/\1/p' \
    "$T/s.err")
port=${url##*:}
port=${port%/}
if [ -n "${HG:-}" ]; then
    "$HG" "$port" /jobs/ckfail >"$T/body"
    for want in '"checkpoints":{"status":"FAILING"' \
        '"consecutive_failed":2' '"tolerable_failed":1' \
        '"failure_message":"mkdir '; do
        expect_in "surfaced: /jobs/ckfail" "$T/body" "$want"
    done
    "$HG" "$port" /metrics >"$T/body"
    expect_in "surfaced: metrics" "$T/body" \
        'tidemark_consecutive_failed_checkpoints{job_name="ckfail"} 2'
fi
# CHECKPOINTS_FAILING is critical here: diagnose exits 4.
expect_exit "surfaced: diagnose" 4 "$TM" diagnose "$url"
# The text is wrapped at 78 columns: search it as one line.
flat "$T/out" >"$T/flat"
expect_in "surfaced: diagnosis" "$T/flat" "(CHECKPOINTS_FAILING)"
expect_in "surfaced: diagnosis" "$T/flat" "[CRITICAL] Checkpoint 2 failed"
expect_in "surfaced: diagnosis" "$T/flat" "fix: Make room in $T/s/ck"
kill -INT "$pid"
wait "$pid" || true
echo "ok"
