#!/bin/sh
# SPDX-License-Identifier: MIT
# tasks.sh - a job run as tasks (scale_out: tasks, docs/scale-out.md)
# by several `tidemark run` processes in one consumer group, with a
# checkpoint folder they share.  Task n is partition n of the input
# topic and the state of its keys (every key lives in one partition);
# it moves between the processes with its state.  In every mode the
# union of the visible file parts of every task equals, as a multiset,
# the same windows over one file per partition (an independent
# reference, one process, no Kafka): no row lost, none duplicated.
# Counted and printed: rows lost, duplicated, and (key, window) results
# out of their windows' order within a key.
#
# Modes (the issue's scenarios; 8 partitions, two members a and b):
#   crash   b is killed (-9) while data flows; a takes b's tasks over
#           from their checkpoints after the session timeout.
#   join    a runs alone, b joins while data flows: b's share of the
#           tasks moves to it (a stops them with a final checkpoint).
#   twice   two checkpointed processes start at once: each task runs
#           in one of them (before tasks, each read every partition).
#   pause   b is stopped (SIGSTOP) past the session timeout: the group
#           gives its tasks to a, which waits for b's checkpoint locks;
#           b resumed (SIGCONT) learns it lost them (librdkafka notices
#           its own session timeout), stops them, and rejoins.
#   zombie  one of b's tasks is taken over by a process b cannot see
#           (another machine: its owner file gets a newer epoch); b
#           stops at the task's next checkpoint without making it
#           durable and exits with the error; a takes b's tasks over
#           (or the roles swap, when a rebalance moved the task to a
#           just before its owner file changed).
#   guard   the job without scale_out: tasks, started twice: the second
#           process is refused (job_guard.c) and writes nothing.
#   http    members started with --http: each serves the tasks it runs
#           (GET /tasks, /jobs, /jobs/<name>.task-<n>/..., /metrics with
#           a task label), before and after a second member joins
#           (HTTP_GET: tests/cli/http_get.c).
#   random  SEED: 2-4 members, random kill -9, SIGTERM, joins and leaves
#           while data flows (the differential test; run by
#           tasks_diff.sh with many seeds).
# With CHANGELOG=1 (every mode but http and guard) the members
# share no checkpoint folder: each keeps its own (ck-<member>), and the
# tasks' checkpoints move through the changelog topic "<group>-changelog"
# (checkpoint.store: changelog), and the job writes to its Kafka sink only
# (a file sink is refused with that store) (STANDBY=1: with
# checkpoint.changelog.standby: all, and at least one restore must come
# from a warm copy).  In
# zombie mode the process on another machine appends an owner record to
# the task's changelog partition instead of writing its owner file.
# With REPART=1 the same modes run through a repartition topic: every
# user sends to every partition, the Kafka key is the partition's region
# r, and the job keys by user, so each task writes its partition's rows
# to "<group>-repartition" by user and reads its partition of that
# topic, whose watermark is the minimum over every task's markers (the
# issue's scenario 2 is mode join with REPART=1).
# Usage: tasks.sh TIDEMARK SOURCE_DIR MOCK TOOL MODE [SEED]
. "$(dirname "$0")/lib.sh"
kafka_init "$@"
SEED=${6:-1}
NP=8
# The session timeout is also the mock cluster's rebalance timeout (less
# 1 s): the time a member has to rejoin after a rebalance begins, its
# revoked tasks' final checkpoints included.  4 s (3 s to rejoin) was too
# short on a loaded CI machine: a member missed a rebalance before the
# test's SIGSTOP (mode pause found no task to take from it), or the two
# members took every task from each other in turn (repart join).  10 s
# leaves room; tasks_diff.sh still sweeps 3 s and 10 s.
SESSION_MS=${SESSION_MS:-10000}
KPROPS="{session.timeout.ms: $SESSION_MS, heartbeat.interval.ms: 500}"
REPART=${REPART:-0}
CHANGELOG=${CHANGELOG:-0}
if [ "$CHANGELOG" -eq 1 ]; then
    case $MODE in
    crash | join | twice | pause | zombie | random) ;;
    *) fail "CHANGELOG=1 runs modes crash, join, twice, pause, zombie and random" ;;
    esac
fi

# A real cluster instead of the mock: TDM_KAFKA_BROKERS=host:port and
# TDM_KAFKA_RUN=<id>, with topics tasks-in-<id> (8 partitions) and
# tasks-out-<id> (2), with REPART=1 tasks-g-<id>-repartition (8) and
# with CHANGELOG=1 tasks-g-<id>-changelog (8, cleanup.policy=compact)
# created beforehand, SESSION_MS at or above the
# brokers' group.min.session.timeout.ms (6 s by default): the consumer
# then reads committed transactions only (librdkafka's default
# isolation.level), and no epoch may arrive twice (docs/scale-out.md).
if [ -n "${TDM_KAFKA_BROKERS:-}" ]; then
    BOOT=$TDM_KAFKA_BROKERS
    IN=tasks-in-$TDM_KAFKA_RUN
    OUT=tasks-out-$TDM_KAFKA_RUN
    GROUP=tasks-g-$TDM_KAFKA_RUN
    STRICT_EOS=1
else
    start_mock clicks:$NP out:2 tasks-g-repartition:$NP \
        tasks-g-changelog:$NP
    IN=clicks
    OUT=out
    GROUP=tasks-g
    STRICT_EOS=0
fi

# gen P N FROM: N records of partition P from event time FROM, 500 ms
# apart, some 900 ms out of order (within the 1 s bound: nothing late);
# three keys per partition, "p<P>-u<i>", so every key lives in one
# (REPART=1: six keys "u<i>" shared by every partition, whose region
# r<P> is the Kafka key).
gen() {
    awk -v p="$1" -v n="$2" -v from="$3" -v rep="$REPART" 'BEGIN {
        for (k = 0; k < n; k++) {
            ts = from + k * 500 + 37 * p - (k % 3 == 2 ? 900 : 0);
            if (rep)
                u = sprintf("u%d", (k * 7 + p) % 6)
            else
                u = sprintf("p%d-u%d", p, (k * 7) % 3)
            printf "{\"r\":\"r%d\",\"user\":\"%s\",\"ts\":%.0f,\"p\":%d}\n",
                   p, u, ts, p;
        }
    }'
}
SCHEMA="schema: {r: string, user: string, ts: int64, p: int64}"
if [ "$REPART" -eq 1 ]; then
    KEYF=r
    SRCX="key.field: r
    repartition: auto"
else
    KEYF=user
    SRCX=""
fi

# The data, in CHUNKS parts per partition produced one after the other
# while the job runs, then a far-ahead record per partition that closes
# every window of the data.
CHUNKS=6
PER=60
p=0
while [ "$p" -lt "$NP" ]; do
    c=0
    while [ "$c" -lt "$CHUNKS" ]; do
        gen "$p" "$PER" $((T0 + c * PER * 500)) >"$W/c$c-p$p.jsonl"
        cat "$W/c$c-p$p.jsonl" >>"$W/all-p$p.jsonl"
        c=$((c + 1))
    done
    printf '{"r":"r%d","user":"far-%d","ts":%d,"p":%d}\n' "$p" "$p" \
        $((T0 + 10000000)) "$p" >"$W/far-p$p.jsonl"
    p=$((p + 1))
done

# produce_parts NAME: the file NAME-p<P>.jsonl of every partition P.
produce_parts() {
    _p=0
    while [ "$_p" -lt "$NP" ]; do
        produce "$IN" --partition "$_p" --key-field "$KEYF" --ts-field ts \
            "$W/$1-p$_p.jsonl"
        _p=$((_p + 1))
    done
}
# produce_chunk C: chunk C of every partition; produce_far: the
# far-ahead records.
produce_chunk() {
    produce_parts "c$1"
}
produce_far() {
    produce_parts far
}

# window NAME SINK: the job's window (YAML, under "windows:").
window() {
    cat <<EOF
  $1:
    from: clicks
    key_by: user
    window: {type: tumbling, size: 5s}
    aggregates: [count() as n, min(ts) as first, max(ts) as last]
    sink: $2
EOF
}
# The reference's windows; the members write the same windows to a
# Kafka topic too.
WINDOWS="windows:
$(window w out)"
KWINDOW=$(window wk kout)

# The reference: one file per partition, one process, no Kafka.
{
    cat <<EOF
name: ref
sources:
  clicks:
    type: file
    path: $W/all-p*.jsonl
    $SCHEMA
    timestamp.field: ts
    watermark: {strategy: bounded, max_out_of_orderness: 1s}
$WINDOWS
sinks:
  out: {type: file, path: $W/ref.jsonl}
EOF
} >"$W/ref.yaml"
run_fg ref "$W/ref.yaml"
n_ref=$(count_lines "$W/ref.jsonl")
[ "$n_ref" -ge 100 ] || fail "reference too small ($n_ref rows)"

# The job every member runs (CHANGELOG=1: each with a checkpoint folder
# of its own, made by member()).
STORE=""
[ "$CHANGELOG" -eq 0 ] || STORE=", store: changelog"
[ "${STANDBY:-0}" -eq 0 ] || STORE="$STORE, changelog.standby: all"
mkdir -p "$W/out"
{
    cat <<EOF
name: tasks
scale_out: tasks
checkpoint: {dir: $W/ck, interval: 200ms$STORE}
sources:
EOF
    kafka_source_yaml clicks "$IN" "$GROUP" "stop: never" "$SCHEMA" "$SRCX" \
        "timestamp.field: ts" \
        "watermark: {strategy: bounded, max_out_of_orderness: 1s}" \
        "kafka.max.partition.fetch.bytes: 2048"
    # CHANGELOG=1: no file sink (refused with the changelog store).
    [ "$CHANGELOG" -eq 1 ] || echo "$WINDOWS"
    [ "$CHANGELOG" -eq 0 ] || echo "windows:"
    echo "$KWINDOW"
    echo "sinks:"
    [ "$CHANGELOG" -eq 1 ] || echo "  out: {type: file, path: $W/out/out.jsonl}"
    echo "  kout: {type: kafka, brokers: \"$BOOT\", topic: $OUT}"
} >"$W/job.yaml"

# The visible rows of every task (committed parts, name order); with
# CHANGELOG=1, the Kafka sink's (kafka_rows below).
visible() {
    if [ "$CHANGELOG" -eq 1 ]; then
        kafka_rows >/dev/null 2>&1 && cat "$W/kgot.jsonl"
        return 0
    fi
    find "$W/out" -name 'out.jsonl.task-*.part-*' | sort |
        grep -E '/out\.jsonl\.task-[0-9]+\.part-[0-9]{10}-[0-9]+$' |
        while read -r f; do cat "$f"; done | grep -v '"far-' || true
}
_visible_at_least() {
    [ "$(visible | wc -l)" -ge "$1" ]
}
# Tasks started so far in log $1.
started() {
    if [ -f "$1" ]; then
        grep -c 'task [0-9]* started' "$1" || true
    else
        echo 0
    fi
}
_started_at_least() {
    _n=0
    for _f in "$W"/m-*.log; do
        _n=$((_n + $(started "$_f")))
    done
    [ "$_n" -ge "$1" ]
}
# member_http NAME: starts member NAME serving its tasks on a free port
# (--http 127.0.0.1:0); sets PORT_<NAME> once the server line is there.
member_http() {
    run_bg "m-$1" "$W/job.yaml" --http 127.0.0.1:0
    eval "PID_$1=\$LAST_PID"
    wait_grep 1 60 "$W/m-$1.log" 'serving http://'
    _p=$(sed -n 's|^tidemark: serving http://.*:\([0-9]*\)/ .*|\1|p' \
        "$W/m-$1.log")
    [ -n "$_p" ] || fail "$1: no port in its server line"
    eval "PORT_$1=\$_p"
}
# get PORT TARGET: the body of GET TARGET into $W/body; fails unless 2xx.
get() {
    "$HTTP_GET" "$1" "$2" >"$W/body" 2>"$W/body.err" ||
        fail "GET $2 on port $1: $(cat "$W/body.err" "$W/body")"
}
# served PORT: how many tasks GET /tasks lists.
served() {
    "$HTTP_GET" "$1" /tasks 2>/dev/null | grep -o '"task":[0-9]*' | wc -l
}
_serves() {
    [ "$(served "$1")" -eq "$2" ]
}
_checkpointed() {
    [ "$("$HTTP_GET" "$1" /tasks 2>/dev/null |
        grep -o '"state_bytes":[1-9]' | wc -l)" -ge "$2" ]
}
_split() {
    _a=$(served "$PORT_a")
    _b=$(served "$PORT_b")
    [ "$_a" -ge 1 ] && [ "$_b" -ge 1 ] && [ $((_a + _b)) -eq "$NP" ]
}
# held LOG: the tasks the member of LOG runs now (its last word on each
# was "started"), one per line.
held() {
    awk '$2 == "task" && $4 == "started" { on[$3] = 1 }
        $2 == "task" && ($4 == "stopped" || $4 == "finished") {
            delete on[$3] }
        END { for (t in on) print t }' "$1" | sort -n
}
_holds() {
    [ "$(held "$1" | wc -l)" -ge "$2" ]
}
# a and b each run a task.
_both_hold() {
    _holds "$W/m-a.log" 1 && _holds "$W/m-b.log" 1
}
# Every task runs, in a or b, and b runs at least one.
_b_holds_some() {
    _hb=$(held "$W/m-b.log" | wc -l)
    [ "$_hb" -ge 1 ] && [ $((_hb + $(held "$W/m-a.log" | wc -l))) -ge "$NP" ]
}
# fenced TASK: the member whose log says TASK was taken over by
# elsewhere-1 (the zombie mode's owner), or nothing.
# With "moved" after the member when the fence hit the task while the
# group was moving it away (a loaded machine's rebalance): the task then
# stops alone and the member runs on ("task 0 stopped (lost): ...").
fenced() {
    for _m in a b; do
        if grep -q "task $1: task $1 was taken over by elsewhere-1" \
            "$W/m-$_m.log" 2>/dev/null; then
            echo "$_m"
            return
        fi
        if grep -E -q "task $1 stopped \([a-z]+\): task $1 was taken over by elsewhere-1" \
            "$W/m-$_m.log" 2>/dev/null; then
            echo "$_m moved"
            return
        fi
    done
}
_fenced() {
    [ -n "$(fenced "$1")" ]
}
# The Kafka sink's rows, as a read_committed consumer would see them:
# every message carries its writer's transactional id (which names the
# task), its epoch (checkpoint) and its place in the epoch; the mock
# shows aborted and replayed transactions too, so a triple seen twice
# must carry the same message and counts once.  Writes the distinct
# rows (far windows left out) to $W/kgot.jsonl and "copies changed gaps"
# to $W/kcheck: repeated triples, triples whose two copies differ, and
# epochs missing a sequence number.
kafka_rows() {
    "$TOOL" consume "$BOOT" "$OUT" --headers >"$W/kout.tsv" 2>>"$W/tool.log" ||
        return 1
    awk -F'\t' -v out="$W/kgot.jsonl" -v chk="$W/kcheck" '
        {
            tx = ""; ep = ""; seq = ""
            n = split($4, h, ";")
            for (i = 1; i <= n; i++) {
                if (h[i] ~ /^tdm-tx=/) tx = substr(h[i], 8)
                if (h[i] ~ /^tdm-epoch=/) ep = substr(h[i], 11)
                if (h[i] ~ /^tdm-seq=/) seq = substr(h[i], 9)
            }
            if (tx == "" || ep == "" || seq == "") { untagged++; next }
            t = tx " " ep " " seq
            if (t in seen) {
                copies++
                if (seen[t] != $3) changed++
                next
            }
            seen[t] = $3
            e = tx " " ep
            cnt[e]++
            if (seq + 1 > top[e]) top[e] = seq + 1
            if ($3 !~ /"far-/) print $3 > out
        }
        END {
            for (e in cnt) if (cnt[e] != top[e]) gaps++
            printf "%d %d %d %d\n", copies, changed, gaps, untagged > chk
        }' "$W/kout.tsv"
    touch "$W/kgot.jsonl"
}
_kafka_at_least() {
    kafka_rows && [ "$(wc -l <"$W/kgot.jsonl")" -ge "$1" ]
}

member() {
    _job=$W/job.yaml
    if [ "$CHANGELOG" -eq 1 ]; then
        _job=$W/job-$1.yaml
        sed "s|dir: $W/ck,|dir: $W/ck-$1,|" "$W/job.yaml" >"$_job"
    fi
    run_bg "m-$1" "$_job"
    eval "PID_$1=\$LAST_PID"
}

# The verdict: counts of rows lost, duplicated and out of order (within
# a key, windows must come in order of their start: a task's parts are
# named by checkpoint).
verdict() {
    visible >"$W/got.jsonl"
    sort "$W/ref.jsonl" >"$W/ref.sorted"
    sort "$W/got.jsonl" >"$W/got.sorted"
    lost=$(comm -23 "$W/ref.sorted" "$W/got.sorted" | wc -l)
    extra=$(comm -13 "$W/ref.sorted" "$W/got.sorted" | wc -l)
    reordered=$(awk -F'"window_start":' '{
            k = $1; split($2, a, ","); s = a[1] + 0
            if ((k in last) && s < last[k]) bad++
            last[k] = s
        } END { print bad + 0 }' "$W/got.jsonl")
    echo "tasks $MODE: reference $n_ref rows, got $(wc -l <"$W/got.jsonl"):" \
        "lost $lost, duplicated $extra, reordered $reordered"
    [ "$lost" -eq 0 ] && [ "$extra" -eq 0 ] && [ "$reordered" -eq 0 ] ||
        fail "the tasks' output differs from the reference"
    kafka_rows || fail "reading the Kafka sink's topic"
    sort "$W/kgot.jsonl" >"$W/kgot.sorted"
    klost=$(comm -23 "$W/ref.sorted" "$W/kgot.sorted" | wc -l)
    kextra=$(comm -13 "$W/ref.sorted" "$W/kgot.sorted" | wc -l)
    read -r copies changed gaps untagged <"$W/kcheck"
    echo "tasks $MODE: Kafka sink: $(wc -l <"$W/kgot.jsonl") distinct rows:" \
        "lost $klost, duplicated $kextra; on the wire $copies repeated" \
        "(aborted or replayed epochs), $changed changed, $gaps epochs" \
        "with a gap, $untagged untagged"
    [ "$klost" -eq 0 ] && [ "$kextra" -eq 0 ] && [ "$changed" -eq 0 ] &&
        [ "$gaps" -eq 0 ] && [ "$untagged" -eq 0 ] ||
        fail "the Kafka sink's output differs from the reference"
    [ "$STRICT_EOS" -eq 0 ] || [ "$copies" -eq 0 ] ||
        fail "a read_committed consumer saw $copies messages twice"
}

# Produces the rest of the chunks from $1 on, then the far records.
produce_rest() {
    c=$1
    while [ "$c" -lt "$CHUNKS" ]; do
        produce_chunk "$c"
        c=$((c + 1))
    done
    produce_far
}

# The group's committed offsets (the task hosts commit each task's
# durable positions at every checkpoint, for lag tools): the end of every
# input partition, with tidemark's checkpoint metadata.  Polled while the
# members run (a running group reaches it once its rebalances settle),
# then read again after every member stopped: no stop moves one back.
# Not asserted at the stop alone: a member stopped while the group
# rebalances (the previous member's leave) has its final commits refused
# by the broker, as docs/scale-out.md says (monitoring only, repaired by
# the tasks' next owner); which of those races wins is the machine's
# load, not tidemark's behaviour (once seen in CI: 3 of 8 behind).
_lag_behind() {
    "$TOOL" committed "$BOOT" "$GROUP" "$IN" >"$W/committed.txt" \
        2>>"$W/tool.log" || fail "reading the group's committed offsets"
    "$TOOL" offsets "$BOOT" "$IN" >"$W/ends.txt" 2>>"$W/tool.log" ||
        fail "reading the input's end offsets"
    behind=$(awk -F'\t' 'NR == FNR { end[$1] = $3; next }
        { if ($2 != end[$1] || $3 !~ /^tdm1 ckpt=/) { bad++ } n++ }
        END { print (n == length(end) ? bad + 0 : "missing") }' \
        "$W/ends.txt" "$W/committed.txt")
}
_lag_settled() {
    _lag_behind
    [ "$behind" = 0 ]
}
lag_check() {
    _lag_behind
    echo "tasks $MODE: group offsets: $behind of $NP partitions behind" \
        "the input's end after the stop"
    [ "$behind" = 0 ] || fail "committed offsets: $(cat "$W/committed.txt")"
}

finish() {
    wait_until 120 "every reference row visible" _visible_at_least "$n_ref"
    wait_until 120 "every reference row in Kafka" _kafka_at_least "$n_ref"
    wait_until 120 "the group's offsets at the input's end" _lag_settled
    for m in "$@"; do
        eval "stop_pid \$PID_$m TERM"
    done
    verdict
    lag_check
    changelog_check
}

# CHANGELOG=1: no member used a shared folder, and the tasks that moved
# were restored from the topic (crash and join move some: at least one).
changelog_check() {
    [ "$CHANGELOG" -eq 1 ] || return 0
    [ ! -e "$W/ck" ] || fail "a member used the shared checkpoint folder"
    [ -z "$(find "$W" -name '*.start')" ] ||
        fail "a repartition start file was written (the changelog holds it)"
    n_rest=$(cat "$W"/m-*.log |
        grep -c "changelog $GROUP-changelog\[[0-9]*\]: checkpoint [0-9]* restored" ||
        true)
    echo "tasks $MODE: changelog store: $n_rest task start(s) restored" \
        "from the topic"
    case $MODE in
    crash | join)
        [ "$n_rest" -ge 1 ] || fail "no task was restored from the topic"
        ;;
    esac
    [ "${STANDBY:-0}" -eq 1 ] || return 0
    n_warm=$(cat "$W"/m-*.log | grep -c 'restored .*kept warm by a standby' ||
        true)
    echo "tasks $MODE: standbys: $n_warm restore(s) from a warm copy"
    [ "$n_warm" -ge 1 ] || fail "no restore came from a standby"
}

case $MODE in
crash)
    produce_chunk 0
    member a
    member b
    wait_until 60 "8 tasks started" _started_at_least 8
    produce_chunk 1
    wait_until 60 "some output" _visible_at_least 8
    wait_until 60 "every task held, some by b" _b_holds_some
    produce_chunk 2
    kill -9 "$PID_b"
    wait_pid "$PID_b" 10 || true
    produce_rest 3
    wait_until 60 "b's tasks taken over" _started_at_least 12
    finish a
    ;;
join)
    produce_chunk 0
    member a
    wait_until 60 "8 tasks started" _started_at_least 8
    produce_chunk 1
    wait_until 60 "some output" _visible_at_least 8
    member b
    produce_chunk 2
    wait_grep 1 60 "$W/m-b.log" 'task [0-9]* started'
    produce_rest 3
    finish a b
    ;;
twice)
    member a
    member b
    # Both take part before the data flows (on a loaded machine one could
    # read it all before the other joined: "one member ran every task").
    wait_until 60 "both members hold tasks" _both_hold
    produce_rest 0
    finish a b
    n_a=$(started "$W/m-a.log")
    n_b=$(started "$W/m-b.log")
    [ "$n_a" -ge 1 ] && [ "$n_b" -ge 1 ] ||
        fail "one member ran every task (a $n_a, b $n_b)"
    ;;
pause)
    produce_chunk 0
    member a
    member b
    wait_until 60 "8 tasks started" _started_at_least 8
    produce_chunk 1
    wait_until 60 "some output" _visible_at_least 8
    # b must hold tasks when it stops: "8 started" counts restarts too,
    # and once on a loaded machine b had none (a's 4, lost and taken
    # again, made the 8), so a had no lock to wait for.
    wait_until 60 "every task held, some by b" _b_holds_some
    kill -STOP "$PID_b"
    produce_chunk 2
    if [ "$CHANGELOG" -eq 1 ]; then
        # No shared lock to wait on: a restores b's tasks from the topic
        # at once, and b, resumed, is fenced there if it checkpoints a
        # task before it learns it lost it.
        wait_until 60 "a runs every task" _holds "$W/m-a.log" "$NP"
    else
        wait_grep 1 60 "$W/m-a.log" 'waiting for its previous owner'
    fi
    kill -CONT "$PID_b"
    produce_rest 3
    finish a b
    ;;
zombie)
    produce_chunk 0
    member a
    member b
    wait_until 60 "8 tasks started" _started_at_least 8
    produce_chunk 1
    wait_until 60 "some output" _visible_at_least 8
    # As in mode pause: "8 started" can be a's restarts alone (once in
    # CI, b still joining), and the zombie must be one of b's tasks.
    wait_until 60 "every task held, some by b" _b_holds_some
    # A task of b taken over by a process this machine cannot see (on
    # another machine, where b's checkpoint lock means nothing): the
    # owner file gets a newer epoch, as that process's host writes it.
    t=$(held "$W/m-b.log" | head -n 1)
    [ -n "$t" ] || fail "b runs no task"
    # The newest durable checkpoint of the task before it changes owner:
    # its holder may complete at most the one in flight (its owner check
    # came before the change; docs/scale-out.md) and none after it.
    # Completed checkpoints only: chk-<id>, not a chk-<id>.tmp-<pid> being
    # written (its name once made this "6.tmp-29146", not a number).
    # (CHANGELOG=1: the newest in either member's folder.)
    before=$(find "$W"/ck* -path "*/task-$t/chk-*" -prune |
        sed -n 's|.*/chk-0*\([0-9][0-9]*\)$|\1|p' | sort -n | tail -n 1)
    if [ "$CHANGELOG" -eq 1 ]; then
        # An owner record with an epoch above any a member took.
        echo "tdmcl1 owner elsewhere-1" >"$W/owner.txt"
        produce "$GROUP-changelog" --partition "$t" \
            --key "owner/1000.0000beef" "$W/owner.txt"
    else
        e=$(sed -n 's/^epoch //p' "$W/ck/task-$t.owner")
        printf 'tidemark task owner\nepoch %d\nowner elsewhere-1\n' \
            $((e + 1)) >"$W/ck/task-$t.owner.tmp"
        mv "$W/ck/task-$t.owner.tmp" "$W/ck/task-$t.owner"
    fi
    # The member that runs the task when its owner file changes is
    # fenced: b, unless a rebalance on a loaded machine moved the task to
    # a in between.  It stops with an error; the other takes its tasks.
    wait_until 60 "a member fenced on task $t" _fenced "$t"
    f=$(fenced "$t")
    v=${f%% *}
    moved=""
    [ "$f" = "$v" ] || moved=1
    s=a
    [ "$v" = a ] && s=b
    eval "pid=\$PID_$v"
    if [ -z "$moved" ] && wait_pid "$pid" 60; then
        fail "the fenced member $v exited with status 0"
    fi
    # Checkpoints of the task it completed up to the fence.
    last=$(sed -n "1,/task $t.*taken over by elsewhere-1/p" "$W/m-$v.log" |
        sed -n "s/.*task $t: checkpoint \([0-9]*\) completed.*/\1/p" |
        tail -n 1)
    [ -n "$before" ] && [ "${last:-0}" -le $((before + 1)) ] ||
        fail "$v completed checkpoint $last of task $t after the takeover" \
            "(newest before it: $before)"
    produce_chunk 2
    produce_rest 3
    if [ -n "$moved" ]; then
        finish a b
    else
        wait_until 60 "$v's tasks taken over by $s" _holds "$W/m-$s.log" "$NP"
        finish "$s"
    fi
    ;;
http)
    # One member serves its tasks (--http): GET /tasks lists every task
    # it runs with its owner epoch and checkpoints, each task's job
    # answers under /jobs/<name>.task-<n>, /metrics carries a task label
    # (one header per family).  A second member joins: the tasks split
    # between the two servers, and the moved ones say where they resumed.
    # What serves one job only is refused, before anything runs.
    for opt in --http-linger --from-scratch; do
        set +e
        "$TM" run "$W/job.yaml" --http 127.0.0.1:0 $opt >/dev/null \
            2>"$W/refused.txt"
        rc=$?
        set -e
        [ "$rc" = 2 ] &&
            grep -q -- "$opt does not apply to scale_out: tasks" \
                "$W/refused.txt" ||
            fail "run $opt: exit $rc, $(cat "$W/refused.txt")"
    done
    produce_chunk 0
    member_http a
    wait_until 60 "8 tasks started" _started_at_least 8
    produce_chunk 1
    wait_until 60 "some output" _visible_at_least 8
    wait_until 60 "a serves 8 tasks" _serves "$PORT_a" 8
    get "$PORT_a" /tasks
    grep -q '"host":"tasks"' "$W/body" || fail "/tasks: $(cat "$W/body")"
    for n in 0 1 2 3 4 5 6 7; do
        grep -q "\"task\":$n,\"id\":\"tasks.task-$n\",\"status\":\"RUNNING\",\"owner_epoch\":[1-9]" \
            "$W/body" || fail "/tasks: task $n missing: $(cat "$W/body")"
    done
    wait_until 60 "a's 8 tasks with a checkpoint's state size" \
        _checkpointed "$PORT_a" 8
    get "$PORT_a" /jobs
    [ "$(grep -o '"id":"tasks.task-[0-7]"' "$W/body" | wc -l)" -eq 8 ] ||
        fail "/jobs: $(cat "$W/body")"
    get "$PORT_a" /jobs/tasks.task-3
    grep -q '"jid":"tasks.task-3"' "$W/body" || fail "/jobs/tasks.task-3"
    get "$PORT_a" /jobs/tasks.task-3/diagnosis
    "$HTTP_GET" "$PORT_a" /jobs/tasks >"$W/body" 2>/dev/null &&
        fail "/jobs/tasks answered 2xx"
    grep -q 'no job \\"tasks\\" (this server runs \\"tasks.task-0\\"' \
        "$W/body" || fail "/jobs/tasks: $(cat "$W/body")"
    get "$PORT_a" /metrics
    for n in 0 7; do
        grep -q "^tidemark_uptime_seconds{job_name=\"tasks.task-$n\",task=\"$n\"" \
            "$W/body" || fail "/metrics: no series of task $n"
    done
    dup=$(grep '^# HELP' "$W/body" | sort | uniq -d | head -n 1)
    [ -z "$dup" ] || fail "/metrics: a family's header twice: $dup"
    member_http b
    wait_grep 1 60 "$W/m-b.log" 'task [0-9]* started'
    wait_until 60 "the tasks split between a and b" _split
    get "$PORT_b" /tasks
    grep -q '"restored_from":[1-9]' "$W/body" ||
        fail "b's tasks resumed from no checkpoint: $(cat "$W/body")"
    produce_chunk 2
    produce_rest 3
    finish a b
    ;;
guard)
    # The same job without scale_out: tasks (checkpointed, one process
    # by static assignment), started twice with two checkpoint folders:
    # before the guard each read every partition and wrote every row.
    # The second is refused before it reads anything; the first goes on.
    for m in a b; do
        grep -v '^scale_out:' "$W/job.yaml" |
            sed "s|dir: $W/ck,|dir: $W/ck-$m,|; s|$W/out/|$W/out-$m/|" \
                >"$W/plain-$m.yaml"
        mkdir -p "$W/out-$m"
    done
    produce_chunk 0
    run_bg m-a "$W/plain-a.yaml"
    PID_a=$LAST_PID
    wait_grep 1 60 "$W/m-a.log" 'checkpoint [0-9]* completed'
    run_bg m-b "$W/plain-b.yaml"
    PID_b=$LAST_PID
    wait_pid "$PID_b" 60 && fail "a second process of a checkpointed job ran"
    grep -q 'job "tasks" already runs in another process' "$W/m-b.log" ||
        fail "b did not say why it stopped"
    [ -z "$(find "$W/out-b" -type f)" ] || fail "the refused process wrote"
    kill -0 "$PID_a" || fail "the first process stopped"
    stop_pid "$PID_a" TERM
    echo "tasks guard: the second process was refused; the first ran on"
    ;;
random)
    # A seeded script of events between the chunks: kill -9, SIGTERM
    # (a member leaves), a member joins, or nothing; 2-4 members at the
    # start, never fewer than one alive.
    RND=$(((SEED * 2654435761 + 97) % 2147483648))
    rnd() {
        RND=$(((RND * 1103515245 + 12345) % 2147483648))
        R=$((RND / 65536 % $1))
    }
    NEXT=0
    LIVE=""
    join_one() {
        member "r$NEXT"
        LIVE="$LIVE r$NEXT"
        NEXT=$((NEXT + 1))
    }
    n_live() {
        echo $LIVE | wc -w
    }
    pick() {
        rnd "$(n_live)"
        VICTIM=$(echo $LIVE | tr ' ' '\n' | sed -n "$((R + 1))p")
    }
    drop() {
        LIVE=$(echo $LIVE | tr ' ' '\n' | grep -v -x "$1" | tr '\n' ' ')
    }
    rnd 3
    k=$((R + 2))
    while [ "$(n_live)" -lt "$k" ]; do
        join_one
    done
    events=""
    c=0
    while [ "$c" -lt "$CHUNKS" ]; do
        produce_chunk "$c"
        rnd 4
        case $R in
        0)
            if [ "$(n_live)" -gt 1 ]; then
                pick
                eval "kill -9 \$PID_$VICTIM"
                eval "wait_pid \$PID_$VICTIM 10" || true
                drop "$VICTIM"
                events="$events kill:$VICTIM"
            fi
            ;;
        1)
            if [ "$(n_live)" -gt 1 ]; then
                pick
                eval "stop_pid \$PID_$VICTIM TERM"
                drop "$VICTIM"
                events="$events term:$VICTIM"
            fi
            ;;
        2)
            join_one
            events="$events join:r$((NEXT - 1))"
            ;;
        esac
        c=$((c + 1))
    done
    produce_far
    echo "tasks random seed $SEED: $k members, session $SESSION_MS ms," \
        "events:${events:- none}"
    # shellcheck disable=SC2086
    finish $LIVE
    ;;
*)
    fail "unknown mode $MODE"
    ;;
esac
