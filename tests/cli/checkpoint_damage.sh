#!/bin/sh
# SPDX-License-Identifier: MIT
# checkpoint_damage.sh - damaged checkpoints end to end through `tidemark
# run` (issue 8; docs/checkpoints.md, "Recovery: choosing a checkpoint",
# "The lock", "File sink parts").  A checkpointed job (file source, keyed
# tumbling windows with late firings and a late output, parallelism 1,
# on-event watermarks) is killed with kill -9 (TDM_FIO_FAULT=rename:N:KILL)
# once at least two checkpoints are complete and the newest one's epoch is
# already committed (its visible part exists).  From a copy of that state,
# the newest checkpoint is damaged in turn - a blob truncated, a byte of a
# blob flipped, the MANIFEST truncated, a blob deleted - and the job is
# restarted: it must say it skips that checkpoint and why, resume from the
# previous one, and its visible output must be exactly the uninterrupted
# run's (the skipped checkpoint's epoch is replayed: the restore must drop
# its committed part, so no row may appear twice), with no checkpoint
# failing on the way (new ids go on above the damaged one) - also when
# the restarted run's only checkpoint is its final one.  A stray temporary
# directory with junk is removed and the newest checkpoint used.  Two
# writers: a second run on the directory of a running one fails naming
# the holder's pid and touches nothing; the first run's output is still
# exactly the uninterrupted run's.
# Usage: checkpoint_damage.sh TIDEMARK SOURCE_DIR
. "$(dirname "$0")/lib.sh"
setup "$@"

# 1,000,000 records of 40 keys, 1 ms apart in event time, up to 0.7 s out
# of order; one in 150 lags 9 s (late: a late firing within the allowed
# lateness, or the late output beyond it).  Long enough for a release
# build to take a dozen checkpoints at the 10 ms interval.
awk 'BEGIN { x = 11
    for (i = 0; i < 1000000; i++) {
        x = (x * 1103515245 + 12345) % 2147483648
        u = int(x / 65536) % 40
        ts = 1700000000000 + i - int(x / 256) % 700
        if (int(x / 8) % 150 == 0) ts -= 9000
        printf "{\"user\":\"k%d\",\"ts\":%.0f}\n", u, ts
    } }' >"$T/in.jsonl"

job() { # job FILE OUTDIR CKDIR
    ck=""
    if [ -n "$3" ]; then
        ck="checkpoint: {dir: $3, interval: 10ms}"
    fi
    cat >"$1" <<YAML
name: dmg
parallelism: 1
$ck
sources:
  in:
    type: file
    path: $T/in.jsonl
    schema: {user: string, ts: int64}
    timestamp: {field: ts}
    watermark: {max_out_of_orderness: 400ms, emit: on_event}
windows:
  w:
    from: in
    key_by: user
    window: {type: tumbling, size: 2s}
    allowed_lateness: 300ms
    aggregates: "count() as n, max(ts) as hi"
    sink: out
    late_output: late
sinks:
  out: {type: file, path: $2/out.jsonl}
  late: {type: file, path: $2/late.jsonl}
YAML
}

# 1. The golden run, without checkpoints.
mkdir "$T/gold"
job "$T/gold.yaml" "$T/gold" ""
expect_exit "golden run" 0 "$TM" run "$T/gold.yaml" --quiet
grep -q '"update":true' "$T/gold/out.jsonl" ||
    fail "the golden run has no late firings"
[ -s "$T/gold/late.jsonl" ] || fail "the golden run has no late records"

# visible OUTDIR BASE: the visible parts of writer 0, in name order.
visible() {
    ls "$1" | grep -E "^$2\\.part-[0-9]{10}-0\$" | sort |
        while read -r f; do cat "$1/$f"; done
}
# bykey FILE: the lines grouped by key, each key's lines in file order.
bykey() {
    awk -F '"user":"' '{ split($2, a, "\""); print a[1] "\t" $0 }' "$1" |
        sort -s -t "$TAB" -k1,1
}
# same_output WHAT EXPECTED ACTUAL: the same lines as a multiset, the same
# order per key, and (one writer) the same order overall.
same_output() {
    same_multiset "$1" "$2" "$3"
    bykey "$2" >"$T/exp.bykey"
    bykey "$3" >"$T/got.bykey"
    cmp -s "$T/exp.bykey" "$T/got.bykey" ||
        fail "$1: the order of some key's rows differs from $2"
    cmp -s "$2" "$3" || fail "$1: the order of the rows differs from $2"
}
check() { # check WHAT OUTDIR
    visible "$2" out.jsonl >"$T/got.out"
    visible "$2" late.jsonl >"$T/got.late"
    same_output "$1: results" "$T/gold/out.jsonl" "$T/got.out"
    same_output "$1: late records" "$T/gold/late.jsonl" "$T/got.late"
}
# ckpts CKDIR: the complete checkpoints' directory names, oldest first.
ckpts() {
    ls "$1" | grep -E '^chk-[0-9]{10}$' | sort
}
# idof NAME: the decimal id of chk-<10 digits>.
idof() {
    id=$(echo "$1" | sed 's/^chk-0*//')
    echo "${id:-0}"
}

# 2. Killed (before its k-th rename) once at least two checkpoints are
# complete and the newest one's epoch is committed: its visible part
# exists, so restoring an older checkpoint must replace it, not add to it.
R="$T/run" # the restarted runs' folders (the job names them)
job "$T/run.yaml" "$R/out" "$R/ck"
k=4
while :; do
    [ $k -lt 400 ] || fail "no kill point with two complete checkpoints"
    rm -rf "$R"
    mkdir -p "$R/out"
    set +e
    TDM_FIO_FAULT="rename:$k:KILL" "$TM" run "$T/run.yaml" --quiet \
        2>"$T/kill.err"
    got=$?
    set -e
    [ $got -ne 0 ] ||
        fail "the run ended before its kill point $k (too little input)"
    k=$((k + 1))
    [ -d "$R/ck" ] || continue
    [ "$(ckpts "$R/ck" | wc -l)" -ge 2 ] || continue
    newest=$(ckpts "$R/ck" | tail -n 1)
    [ -f "$R/out/out.jsonl.part-${newest#chk-}-0" ] && break
done
cp -R "$R" "$T/killed"
newest=$(ckpts "$R/ck" | tail -n 1)
prev=$(ckpts "$R/ck" | tail -n 2 | head -n 1)
nid=$(idof "$newest")
prev_id=$(idof "$prev")
echo "killed before rename $((k - 1)): checkpoints $(ckpts "$R/ck" |
    tr '\n' ' ')(newest $nid committed)"

# The newest checkpoint's blobs: the largest, and the first by name.
NEWDIR="$R/ck/$newest"
big=$(ls -S "$T/killed/ck/$newest" | grep -v '^MANIFEST$' | head -n 1)
first=$(ls "$T/killed/ck/$newest" | grep -v '^MANIFEST$' | sort | head -n 1)
[ -n "$big" ] && [ -n "$first" ] || fail "the newest checkpoint has no blob"

fresh() { # fresh: the run's folders as the kill left them
    rm -rf "$R"
    cp -R "$T/killed" "$R"
}
truncate_half() { # truncate_half FILE
    size=$(wc -c <"$1")
    [ "$size" -ge 2 ] || fail "$1 is too small to truncate"
    head -c $((size / 2)) "$1" >"$T/cut"
    cat "$T/cut" >"$1"
}
flip_byte() { # flip_byte FILE: inverts the bits of the middle byte
    size=$(wc -c <"$1")
    off=$((size / 2))
    b=$(od -An -tu1 -j "$off" -N1 "$1" | tr -d ' ')
    cp "$1" "$T/before"
    printf "\\$(printf %o $((b ^ 255)))" |
        dd of="$1" bs=1 seek="$off" conv=notrunc 2>/dev/null
    [ "$(wc -c <"$1")" -eq "$size" ] || fail "flip_byte changed the size"
    [ "$(cmp -l "$T/before" "$1" | wc -l)" -eq 1 ] ||
        fail "flip_byte did not change exactly one byte"
}
# none_failed WHAT: no checkpoint of the restarted run failed.  New ids go
# on above the newest checkpoint in the directory, damaged or not
# (docs/checkpoints.md, "Restore"), so none collides with an old one.
none_failed() {
    if grep -E "^tidemark: checkpoint [0-9]+ failed" "$T/err" >&2; then
        fail "$1: a checkpoint failed after the restore (above)"
    fi
}
# restart WHAT REASON: the restarted run skips the newest checkpoint for
# REASON, resumes from the previous one, and writes the golden output.
restart() {
    expect_exit "$1" 0 "$TM" run "$T/run.yaml" --quiet
    expect_in "$1" "$T/err" "skipping checkpoint $nid: $2"
    expect_in "$1" "$T/err" \
        "checkpoint: resuming from checkpoint $prev_id in $R/ck"
    none_failed "$1"
    check "$1" "$R/out"
}

# 3a. A blob cut in half.
fresh
truncate_half "$NEWDIR/$big"
was=$(wc -c <"$T/killed/ck/$newest/$big")
restart "truncated blob" \
    "blob $NEWDIR/$big: $((was / 2)) bytes, the manifest says $was"

# 3b. One byte of a blob flipped.
fresh
flip_byte "$NEWDIR/$big"
restart "flipped byte" "blob $NEWDIR/$big: CRC mismatch ("

# 3c. The MANIFEST cut in half.
fresh
truncate_half "$NEWDIR/MANIFEST"
restart "truncated manifest" "manifest $NEWDIR/MANIFEST: "
expect_in "truncated manifest" "$T/err" ": manifest CRC mismatch"

# 3d. A blob deleted.
fresh
rm "$NEWDIR/$first"
restart "deleted blob" "open $NEWDIR/$first: No such file or directory"

# 3e. A stray temporary directory (of a writer that died: the pid of a
# process that has exited) with junk, above the newest checkpoint: it is
# removed, and the newest checkpoint is used.
fresh
sh -c 'exit 0' &
dead=$!
wait "$dead"
stray="$R/ck/chk-$(printf %010d $((nid + 1))).tmp-$dead"
mkdir "$stray"
cp "$NEWDIR/MANIFEST" "$stray/MANIFEST"
echo junk >"$stray/$big"
head -c 1000 "$T/in.jsonl" >"$stray/junk"
expect_exit "stray temporary directory" 0 "$TM" run "$T/run.yaml" --quiet
expect_in "stray" "$T/err" "removed stray temporary directory $stray"
expect_in "stray" "$T/err" \
    "checkpoint: resuming from checkpoint $nid in $R/ck"
if grep -q "skipping checkpoint" "$T/err"; then
    cat "$T/err" >&2
    fail "stray: a checkpoint was skipped"
fi
[ ! -e "$stray" ] || fail "stray: $stray is still there"
none_failed "stray"
check "stray temporary directory" "$R/out"

# 3f. A blob cut in half, and the restarted run's only checkpoint is its
# final one (the rest of the input takes less than an interval, as after
# a crash near the end with the default 10 s): that checkpoint must not
# collide with the damaged one, or the run fails with its last epoch
# left pending, and so does every later run.
fresh
truncate_half "$NEWDIR/$big"
expect_exit "damaged, final checkpoint only" 0 "$TM" run "$T/run.yaml" \
    --quiet --set checkpoint.interval=1h
expect_in "final only" "$T/err" "skipping checkpoint $nid: blob $NEWDIR/$big"
expect_in "final only" "$T/err" \
    "checkpoint: resuming from checkpoint $prev_id in $R/ck"
none_failed "damaged, final checkpoint only"
check "damaged, final checkpoint only" "$R/out"

# 3g. Does restoring past a committed epoch repeat it?  The skipped
# checkpoint's visible parts must be gone as soon as the sinks are
# recovered, whatever ids the replay then uses.  The restarted run is
# killed before its first rename: the restored checkpoint's own parts
# were all committed before the newest checkpoint began its commit, so
# recovery renames nothing and that rename is the first epoch's.
fresh
truncate_half "$NEWDIR/$big"
set +e
TDM_FIO_FAULT="rename:1:KILL" "$TM" run "$T/run.yaml" --quiet 2>"$T/err"
got=$?
set -e
[ $got -ne 0 ] || fail "recovered parts: the run was not killed"
expect_in "recovered parts" "$T/err" \
    "checkpoint: resuming from checkpoint $prev_id in $R/ck"
ls -a "$R/out" | grep -E '\.part-[0-9]{10}-0(\.pending)?$' |
    sed -E 's/.*part-0*([0-9]+)-0.*/\1/' >"$T/ids"
while read -r id; do
    [ "$id" -le "$prev_id" ] || {
        ls -a "$R/out" >&2
        fail "recovered parts: a part of epoch $id > $prev_id is left"
    }
done <"$T/ids"

# 4. Two writers: the first run, stopped once it holds the lock (its pid
# is in LOCK), keeps it; a second run on the same job fails naming that
# pid and changes no file of the first's; resumed, the first run's output
# is the golden one.
W="$T/tw"
mkdir -p "$W/out"
job "$T/tw.yaml" "$W/out" "$W/ck"
"$TM" run "$T/tw.yaml" --quiet 2>"$T/tw.err" &
pid=$!
# A failure below must not leave the first run stopped for ever.
trap 'kill -9 "$pid" 2>/dev/null; rm -rf "$T"' EXIT
n=0
until [ "$(cat "$W/ck/LOCK" 2>/dev/null)" = "$pid" ]; do
    kill -0 "$pid" 2>/dev/null || fail "two writers: the first run ended"
    n=$((n + 1))
    [ $n -lt 6000 ] || fail "two writers: no lock after 60 s"
    sleep 0.01
done
kill -STOP "$pid"
# Stopped once every thread is (one in a system call, state D, stops
# when the call returns); a run that ended first is a zombie (Z).
states() {
    cat "/proc/$pid"/task/*/stat 2>/dev/null |
        sed 's/^.*) \(.\).*/\1/' | sort -u | tr -d '\n'
}
n=0
while [ "$(states)" != T ]; do
    case "$(states)" in
    *Z* | "") fail "two writers: the first run ended before its stop" ;;
    esac
    n=$((n + 1))
    [ $n -lt 6000 ] ||
        fail "two writers: the first run not stopped ($(states))"
    sleep 0.01
done
snap() { # snap DIR: every file under DIR with its checksum
    find "$1" -type f | sort | while read -r f; do
        printf '%s %s\n' "$f" "$(cksum <"$f")"
    done
}
snap "$W" >"$T/tw.before"
set +e
"$TM" run "$T/tw.yaml" --quiet >"$T/out" 2>"$T/err"
got=$?
set -e
snap "$W" >"$T/tw.after"
kill -CONT "$pid"
[ $got -eq 1 ] || {
    cat "$T/err" >&2
    fail "two writers: the second run's exit code is $got, expected 1"
}
expect_in "two writers" "$T/err" \
    "checkpoint directory $W/ck is in use by another tidemark (pid $pid)"
diff -u "$T/tw.before" "$T/tw.after" >&2 ||
    fail "two writers: the second run changed the first's files"
set +e
wait "$pid"
got=$?
set -e
trap 'rm -rf "$T"' EXIT
[ $got -eq 0 ] || {
    cat "$T/tw.err" >&2
    fail "two writers: the first run failed"
}
check "two writers (the first)" "$W/out"
echo "ok"
