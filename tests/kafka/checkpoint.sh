#!/bin/sh
# SPDX-License-Identifier: MIT
# checkpoint.sh - Kafka sources and the Kafka sink in checkpointed jobs
# (docs/checkpoints.md, "Kafka sources" and "Kafka sink transactions").
# A job reads a topic of three partitions (partitions assigned by
# subtask, positions from the checkpoint) into two identical keyed
# tumbling windows, one writing a file sink, one a Kafka sink.  It is
# killed (TDM_FIO_FAULT=rename:N:KILL: a kill -9 just before the N-th
# rename of the process - checkpoint directories, file parts) and run
# again, at the same or another parallelism.  Checked per scenario:
# - the visible file parts hold exactly the rows of the same windows
#   over one file per partition (an independent reference), as a
#   multiset;
# - the Kafka sink's committed transactions hold each of those rows
#   exactly once.  The mock cluster does not hide aborted transactions
#   from read_committed consumers, so the test emulates one: with
#   log.level debug the sink logs, per transaction, the offsets of its
#   messages before the commit ("txn prepared") and the commit after it
#   ("txn committed"); a prepared transaction of the killed run without
#   its "committed" line is committed when its writer's marker (the
#   offset the transaction commits for the group named by its
#   transactional.id) reached its checkpoint, read right after the kill.
#   The mock answers every transaction commit 150 ms late, so some kills
#   land inside one, and the tN scenarios die just before one (a test
#   hook, TDM_KAFKA_MOCK_KILL);
# - the source's group holds the final offsets ("tdm1 ckpt=" metadata).
# Then: a restore onto topics whose partitions moved is refused, and so
# is topic_pattern with checkpoint.dir.
# Usage: checkpoint.sh TIDEMARK SOURCE_DIR MOCK TOOL
. "$(dirname "$0")/lib.sh"
# Nine runs and their restarts: CTest gives this script 1200 s.
WATCHDOG_S=1190
kafka_init "$@"
# The mock drops the offsets a transaction commits: the sink also
# commits its marker plainly after each transaction (test hook).
TDM_KAFKA_MOCK_MARKER=1
export TDM_KAFKA_MOCK_MARKER

# Scenarios: name, parallelism, when to die, parallelism of the run
# after the kill.  When: N, before the N-th rename; tN, SIGKILL just
# before the N-th Kafka transaction's commit (TDM_KAFKA_MOCK_KILL=N: its
# messages delivered and its offsets sent, the checkpoint it belongs to
# durable, so a crash here is the case a Kafka sink without the
# write-ahead log loses; a kill by this script after the "prepared" log
# line missed the commit now and then on a loaded machine, and the
# check below failed: "the kill did not land inside a Kafka commit");
# the kill comes before the 2nd commit (g, h): a run whose source reads
# everything within one checkpoint interval makes only two transactions
# with messages (the windows fired while reading, those fired at the
# end), so a kill before the 3rd (4th at parallelism 2) missed them in
# about one run in three on an idle machine, before and after issue 18;
# cN, kill -9 as soon as the N-th is committed (the
# restored checkpoint lists an epoch already committed: only the marker
# tells); 0, never (the run ends; the next restores its final
# checkpoint, whose last epoch is committed too).
SCENARIOS="a 1 2 1
b 1 7 1
d 2 6 2
e 2 11 1
f 1 9 2
g 1 t2 1
h 2 t2 2
i 1 c2 1
j 1 0 1"
# A subset (by hand: SCENARIOS_ONLY="g h").
if [ -n "${SCENARIOS_ONLY:-}" ]; then
    SCENARIOS=$(echo "$SCENARIOS" |
        awk -v only=" $SCENARIOS_ONLY " 'index(only, " " $1 " ")')
fi
NREC=2000

topics="clicks:3 a0:1"
for s in $(echo "$SCENARIOS" | cut -d' ' -f1); do
    topics="$topics out-$s:1"
done
# Every transaction's commit (EndTxn, request type 26) is answered
# 150 ms late: kills may land inside commits, and the tN scenarios do.
MOCK_OPTS="--delay 26:150"
# shellcheck disable=SC2086
start_mock $topics
for p in 0 1 2; do
    gen_clicks "$p" "$NREC" >"$W/part-$p.jsonl"
    produce clicks --partition "$p" --key-field user --ts-field ts \
        "$W/part-$p.jsonl"
done

# The windows: $1 the file sink's path, $2 the Kafka topic.
windows_yaml() {
    cat <<EOF
windows:
  wf:
    from: clicks
    key_by: user
    window: {type: tumbling, size: 10s}
    aggregates: [count() as n, min(ts) as first, max(ts) as last]
    sink: fout
  wk:
    from: clicks
    key_by: user
    window: {type: tumbling, size: 10s}
    aggregates: [count() as n, min(ts) as first, max(ts) as last]
    sink: kout
sinks:
  fout: {type: file, path: $1}
  kout: {type: kafka, brokers: "$BOOT", topic: $2}
EOF
}

# The reference: one file per partition, no checkpoints, one window.
{
    cat <<EOF
name: ref
sources:
  clicks:
    type: file
    path: $W/part-*.jsonl
    schema: {user: string, ts: int64, p: int64}
    timestamp.field: ts
    watermark: {strategy: bounded, max_out_of_orderness: 1s, emit: on_event}
windows:
  w:
    from: clicks
    key_by: user
    window: {type: tumbling, size: 10s}
    aggregates: [count() as n, min(ts) as first, max(ts) as last]
    sink: out
sinks:
  out: {type: file, path: $W/ref.jsonl}
EOF
} >"$W/ref.yaml"
run_fg ref "$W/ref.yaml"
n_ref=$(count_lines "$W/ref.jsonl")
# 3 x 2000 records 700 ms apart: 140 windows of 5 users.
[ "$n_ref" -eq 700 ] || fail "reference: expected 700 rows, got $n_ref"
sort "$W/ref.jsonl" >"$W/ref.sorted"

# job NAME PARALLELISM: $W/NAME.yaml, checkpoints in $W/ck-NAME, files
# in $W/out-NAME/, the Kafka sink to topic out-NAME.  Small fetches and
# a small prefetch queue make the reading span tens of checkpoints, and
# on-event watermarks fire windows all along.
job() {
    mkdir -p "$W/out-$1"
    {
        cat <<EOF
name: k$1
parallelism: $2
log.level: debug
checkpoint: {dir: $W/ck-$1, interval: 20ms}
sources:
EOF
        kafka_source_yaml clicks clicks "g-$1" "stop: end" \
            "schema: {user: string, ts: int64, p: int64}" \
            "timestamp.field: ts" \
            "watermark: {strategy: bounded, max_out_of_orderness: 1s," \
            "            emit: on_event}" \
            "kafka.max.partition.fetch.bytes: 1024" \
            "kafka.queued.max.messages.kbytes: 1"
        windows_yaml "$W/out-$1/out.jsonl" "out-$1"
    } >"$W/$1.yaml"
}

# Every visible part of every writer (name order: by checkpoint, then
# writer).
visible() {
    find "$W/out-$1" -name 'out.jsonl.part-*' | sort |
        grep -E '/out\.jsonl\.part-[0-9]{10}-[0-9]+$' |
        while read -r f; do cat "$f"; done
}

# The rows of the Kafka sink's committed transactions for scenario $1:
# logs $W/$1-kill.log (with markers in $W/$1-marks.txt) and
# $W/$1-again.log, messages in $W/$1-msgs.tsv.
committed_rows() {
    awk -F'\t' -v marks="$W/$1-marks.txt" '
        # The markers after the kill: "id checkpoint".
        FILENAME == marks { mark[$1] = $2; next }
        # Log lines: remember prepared transactions, then commits.
        FILENAME ~ /\.log$/ {
            if ($0 ~ /debug txn (prepared|committed) /) {
                id = $0; sub(/.* id=/, "", id); sub(/ .*/, "", id)
                ck = $0; sub(/.* checkpoint=/, "", ck); sub(/ .*/, "", ck)
                key = FILENAME " " id " " ck
                if ($0 ~ /prepared/) {
                    offs = $0
                    if (offs !~ / offsets=/) { nooff++; next }
                    sub(/.*@/, "", offs)
                    prep[key] = offs
                    run[key] = FILENAME
                    tx[key] = id
                    ckp[key] = ck
                } else {
                    done[key] = 1
                }
            }
            next
        }
        # Messages: partition, offset, key, value.  The first time
        # here: which offsets belong to committed transactions.
        !ready {
            ready = 1
            for (k in prep) {
                ok = done[k]
                if (!ok && run[k] ~ /-kill\.log$/ && (tx[k] in mark) &&
                    mark[tx[k]] + 0 >= ckp[k] + 0)
                    ok = 1
                if (!ok) { aborted++; continue }
                n = split(prep[k], r, ",")
                for (i = 1; i <= n; i++) {
                    split(r[i], ab, "-")
                    for (o = ab[1] + 0; o <= ab[2] + 0; o++) {
                        if (o in keep) twice++
                        keep[o] = 1
                    }
                }
            }
        }
        ($2 + 0) in keep { print $4; kept++; next }
        { dropped++ }
        END {
            printf "%d kept, %d of aborted transactions, %d aborted " \
                   "transaction(s), %d without offsets, %d twice\n",
                   kept, dropped, aborted, nooff, twice > "/dev/stderr"
            if (twice || nooff) exit 1
        }' "$W/$1-marks.txt" "$W/$1-kill.log" "$W/$1-again.log" \
        "$W/$1-msgs.tsv"
}

echo "$SCENARIOS" | while read -r s p n p2; do
    job "$s" "$p"
    mkill=""
    case $n in
    t*) fault="" mkill=${n#t} ;;
    c* | 0) fault="" ;;
    *) fault="rename:$n:KILL" ;;
    esac
    TDM_FIO_FAULT="$fault" TDM_KAFKA_MOCK_KILL="$mkill" "$TM" run \
        "$W/$s.yaml" >"$W/$s-kill.stdout" 2>"$W/$s-kill.log" &
    pid=$!
    track "$pid"
    echo "$pid" >>"$W/pids"
    case $n in c*)
        # Polled without the 50 ms of wait_grep: the commit takes a few
        # mock round trips.
        k=${n#?}
        end=$(($(now_ms) + 60000 * WAIT_SCALE))
        while [ "$(grep -c "debug txn committed" "$W/$s-kill.log")" -lt "$k" ]
        do
            kill -0 "$pid" 2>/dev/null || break
            [ "$(now_ms)" -lt "$end" ] || fail "scenario $s: no transaction $k"
            sleep 0.001
        done
        kill -9 "$pid" 2>/dev/null || true
        ;;
    esac
    wait_pid "$pid" 60 || true
    rc=$WAIT_RC
    [ "$rc" -eq 137 ] || [ "$rc" -eq 0 ] ||
        fail "scenario $s: the first run exited with $rc"
    # Each writer's marker right after the kill.
    : >"$W/$s-marks.txt"
    w=0
    while [ "$w" -lt "$p" ]; do
        "$TOOL" committed "$BOOT" "tidemark-k$s-kout-$w" "out-$s" \
            >"$W/mark.txt" 2>>"$W/tool.log" || fail "reading a marker"
        m=$(cut -f2 "$W/mark.txt")
        echo "tidemark-k$s-kout-$w ${m:--1}" | tr ' ' '\t' >>"$W/$s-marks.txt"
        w=$((w + 1))
    done
    # Again, to the end (at parallelism p2).
    sed "s/^parallelism: .*/parallelism: $p2/" "$W/$s.yaml" >"$W/$s-2.yaml"
    run_fg "$s-again" "$W/$s-2.yaml"
    visible "$s" | sort >"$W/$s-files.sorted"
    cmp -s "$W/ref.sorted" "$W/$s-files.sorted" || {
        diff "$W/ref.sorted" "$W/$s-files.sorted" | head -n 20 >&2
        fail "scenario $s (parallelism $p, kill point $n," \
            "then $p2): the file parts differ from the reference"
    }
    # The group got the final positions, for monitoring only (the
    # checkpoint holds the truth): every partition at its end.
    "$TOOL" committed "$BOOT" "g-$s" clicks >"$W/$s-committed.txt" ||
        fail "reading the offsets of group g-$s"
    awk -F'\t' -v n="$NREC" '$2 != n || $3 !~ /^tdm1 ckpt=/ { bad++ }
        END { exit bad > 0 || NR != 3 }' "$W/$s-committed.txt" || {
        cat "$W/$s-committed.txt" >&2
        fail "scenario $s: the group's offsets are not the ends with" \
            "\"tdm1 ckpt=\" metadata"
    }
    consume "out-$s" --offsets >"$W/$s-msgs.tsv"
    committed_rows "$s" 2>"$W/$s-count.txt" >"$W/$s-kafka.jsonl" ||
        fail "scenario $s: $(cat "$W/$s-count.txt")"
    case $n in
    t*) grep -q ' [1-9][0-9]* aborted transaction' "$W/$s-count.txt" ||
        fail "scenario $s: the kill did not land inside a Kafka commit" \
            "($(cat "$W/$s-count.txt"))" ;;
    esac
    sort "$W/$s-kafka.jsonl" >"$W/$s-kafka.sorted"
    cmp -s "$W/ref.sorted" "$W/$s-kafka.sorted" || {
        diff "$W/ref.sorted" "$W/$s-kafka.sorted" | head -n 20 >&2
        fail "scenario $s (parallelism $p, kill point $n," \
            "then $p2): the Kafka sink's committed rows differ from the" \
            "reference ($(cat "$W/$s-count.txt"))"
    }
    echo "scenario $s: rc $rc, $(grep -c 'resuming from' "$W/$s-again.log")" \
        "restore(s), kafka: $(cat "$W/$s-count.txt")"
    echo "$rc" >>"$W/rcs"
    grep -c 'resuming from' "$W/$s-again.log" >>"$W/resumes" || true
done
# The topics' partitions must not move under the static assignment: a
# topic sorted before "clicks" shifts every global index, and the
# restore is refused (not: a split's watermark state on another
# partition).
s=$(echo "$SCENARIOS" | tail -n 1 | cut -d' ' -f1)
sed 's/^    topics: clicks$/    topics: "clicks,a0"/' "$W/$s.yaml" \
    >"$W/moved.yaml"
grep -q 'topics: "clicks,a0"' "$W/moved.yaml" || fail "moved.yaml"
"$TM" run "$W/moved.yaml" --quiet >/dev/null 2>"$W/moved.log" &&
    fail "a restore onto moved partitions was not refused"
grep -q 'their partitions changed' "$W/moved.log" || {
    cat "$W/moved.log" >&2
    fail "the refused restore does not say why"
}
# What has no checkpoint position is refused before anything runs.
sed 's/^    topics: clicks$/    topic_pattern: "^clicks"/' "$W/$s.yaml" \
    >"$W/pattern.yaml"
"$TM" validate "$W/pattern.yaml" >/dev/null 2>"$W/pattern.log" &&
    fail "topic_pattern with checkpoint.dir validated"
grep -q 'topic_pattern cannot be used with checkpointing' "$W/pattern.log" ||
    fail "topic_pattern refused without the reason: $(cat "$W/pattern.log")"
# The kills hit (a run that ended before its N-th rename was not killed).
n_sc=$(echo "$SCENARIOS" | wc -l)
[ "$(grep -c '^137$' "$W/rcs")" -ge $(((n_sc + 1) / 2)) ] ||
    fail "fewer than half the scenarios were killed:" \
        "$(tr '\n' ' ' <"$W/rcs")"
[ "$(grep -c '^1$' "$W/resumes")" -ge $(((n_sc + 1) / 2)) ] ||
    fail "fewer than half the scenarios resumed from a checkpoint"
echo "checkpoint.sh: ok"
