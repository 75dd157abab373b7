#!/bin/sh
# SPDX-License-Identifier: MIT
# fresh_start.sh - the committed-output cases of issue 18, one by one
# (docs/checkpoints.md, "Rescaling and fresh starts"); rescale.sh draws
# them at random.  The job and the golden output are rescale.sh's (one
# file per source: the same output at any parallelism).
#
# 1. Rescale down and up again: a run at parallelism 2 killed after its
#    first commits, one at parallelism 1 to the end, one more at 2.  The
#    third run's writer 1 was not in the checkpoint it restored; it used
#    to start "fresh" and delete every part it had ever written.
# 2. The same output read in name order: every key's rows in the order
#    they were produced, though keys moved between writers (the parts
#    were named writer first, and the retract-mode rows of a key that
#    moved from writer 1 to writer 0 came out of order).
# 3. --from-scratch killed before its first checkpoint: the old run's
#    output and checkpoints stay valid, and a plain restart resumes it
#    (it used to fail: "pending part ... is missing", the output gone).
# 4. --from-scratch to the end: the new output replaces the old, which
#    is moved aside whole into out/SINK.jsonl.replaced-<id>/.
# 5. The checkpoint folder emptied by hand, then a run: the new run's
#    ids go above the old parts' (no name is taken twice) and the old
#    output is moved aside whole.
# 6. A run at parallelism 3 killed before its first checkpoint (its
#    writer 2 pre-committed a part), a run at 1 from the checkpoint of
#    a run at 2, then --from-scratch: writer 2's part was never committed
#    and must not reach the replaced folder (crash.rescale's seed 48 saw
#    it there as duplicate rows: no restore swept it, as no run after had
#    a writer 2).
#
# Usage: fresh_start.sh TIDEMARK SOURCE_DIR CRASH_TOOL
. "$(dirname "$0")/start.sh"

JOB_SET="--set sources.clicks.path=data/clicks-0.jsonl
--set sources.orders.path=data/orders-0.jsonl
--set sources.payments.path=data/payments-0.jsonl"
make_input 20000
make_golden 2

# must WHAT SPEC [OPTION...]: an invocation that exits 0 (SPEC "") or is
# killed by its fault (137).
must() {
    what=$1
    shift
    invoke "$@"
    want=0
    [ -z "$1" ] || want=137
    if [ "$rc" != "$want" ]; then
        tail -n 20 "$T/run.err" >&2
        fail "$what: exit code $rc, expected $want"
    fi
}

# replaced_ids: the ids of the folders a fresh start moved results aside to.
replaced_ids() {
    for f in out/results.jsonl.replaced-*; do
        if [ -d "$f" ]; then echo "${f##*-}"; fi
    done
}

# ---- 1 and 2: down to parallelism 1 and up to 2 again ----
: >"$T/run.err"
must "case 1, the run at parallelism 2" rename:60:KILL --parallelism 2
ls out | grep -E -q '^results\.jsonl\.part-[0-9]{10}-1$' ||
    fail "case 1: the first run committed nothing of writer 1 (missed)"
must "case 1, the run at parallelism 1" "" --parallelism 1
must "case 1, the run at parallelism 2 again" "" --parallelism 2
check_all "case 1 and 2 (rescaled 2, 1, 2)" ||
    fail "case 1 and 2: rows lost, duplicated or out of order per key"
echo "ok: case 1 and 2"

# ---- 3: --from-scratch killed before its first checkpoint ----
# The first rename of a fresh run seals a part for its first checkpoint:
# nothing of it is durable yet.
must "case 3, the fresh start" rename:1:KILL --from-scratch
check_all "case 3, after the killed fresh start" ||
    fail "case 3: the killed fresh start changed the committed output"
must "case 3, the plain restart" ""
check_all "case 3, after the restart" ||
    fail "case 3: the restart did not resume the old run exactly"
[ -z "$(replaced_ids)" ] || fail "case 3: output was moved aside"
echo "ok: case 3"

# ---- 4: --from-scratch to the end ----
must "case 4, the fresh start" "" --from-scratch
check_all "case 4, the new output" ||
    fail "case 4: the fresh start's output is not the golden output"
ids=$(replaced_ids)
[ -n "$ids" ] && [ "$(echo "$ids" | wc -l)" -eq 1 ] ||
    fail "case 4: expected one replaced folder, got: $ids"
check_all "case 4, the output moved aside" "$ids" ||
    fail "case 4: the replaced output is not whole"
echo "ok: case 4"

# ---- 5: the checkpoint folder emptied by hand ----
rm -rf ck
must "case 5, the run without checkpoints in ck" "" --parallelism 2
check_all "case 5, the new output" ||
    fail "case 5: the new output is not the golden output"
for id in $(replaced_ids); do
    check_all "case 5, the output moved aside at $id" "$id" ||
        fail "case 5: the output moved aside at $id is not whole"
done
[ "$(replaced_ids | wc -l)" -eq 2 ] ||
    fail "case 5: expected two replaced folders, got: $(replaced_ids)"
echo "ok: case 5"

# ---- 6: another writer's pending part of a checkpoint never durable ----
rm -rf out ck
k=40
while :; do
    [ $k -lt 400 ] || fail "case 6: no kill left a part of writer 2 pending"
    rm -rf out ck
    : >"$T/run.err"
    must "case 6, the run at parallelism 2" rename:$k:KILL --parallelism 2
    k=$((k + 20))
    ls ck | grep -q '^chk-' || continue
    must "case 6, the run at parallelism 3" mkdir:1:KILL --parallelism 3
    ls -a out | grep -E -q '^\.[a-z_]+\.jsonl\.part-[0-9]{10}-2\.pending$' &&
        break
done
must "case 6, the run at parallelism 1" "" --parallelism 1
check_all "case 6, after the run at parallelism 1" ||
    fail "case 6: the output differs after the restarts"
must "case 6, the fresh start" "" --from-scratch
check_all "case 6, the new output" ||
    fail "case 6: the fresh start's output is not the golden output"
check_all "case 6, the output moved aside" "$(replaced_ids)" ||
    fail "case 6: the replaced output is not whole (a part never committed)"
echo "ok: case 6"
