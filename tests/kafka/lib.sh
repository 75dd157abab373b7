# SPDX-License-Identifier: MIT
# lib.sh - shared helpers of the Kafka end-to-end tests (tests/kafka/*.sh,
# sourced, POSIX sh): a private work directory, the mock cluster
# (tdm_kafka_mock), `tidemark run` processes in the background, and
# waits that poll a condition with a deadline instead of sleeping.
#
# Every script is called as: SCRIPT TIDEMARK SOURCE_DIR MOCK TOOL [MODE]
# and sets TM, SRC, MOCK, TOOL, W (work dir) by calling kafka_init "$@".
# Jobs must set kafka.session.timeout.ms: 4000 and
# kafka.heartbeat.interval.ms: 500 (the mock's group waits: first
# assignment 3 s, a rebalance session.timeout.ms - 1000) - KPROPS below.

set -eu

# Properties every test job gives its Kafka sources (YAML map body).
KPROPS='{session.timeout.ms: 4000, heartbeat.interval.ms: 500}'
# Event times of the tests start here (a whole number of 10 s, far from
# 0: a producer timestamp of 0 means "now" in Kafka).
T0=1700000000000

kafka_init() {
    TM=$1
    SRC=$2
    MOCK=$3
    TOOL=$4
    MODE=${5:-}
    W=$(mktemp -d "${TMPDIR:-/tmp}/tdm-kafka.XXXXXX")
    trap kafka_cleanup EXIT
    trap 'exit 1' INT TERM
    # A watchdog ends every process the test started when the test itself
    # is killed (a CTest timeout): tidemark runs with stop: never would
    # otherwise run on.  It holds no pipe of the test's, and ends within a
    # second once kafka_cleanup removed the pid file.  WATCHDOG_S (default
    # 595) stays below the test's CTest timeout (600 s).
    : >"$W/pids"
    DEADLINE_MS=$(($(now_ms) + (${WATCHDOG_S:-595} - 30) * 1000))
    (
        n=0
        while [ "$n" -lt "${WATCHDOG_S:-595}" ] && [ -f "$W/pids" ]; do
            sleep 1
            n=$((n + 1))
        done
        # shellcheck disable=SC2046
        [ -f "$W/pids" ] && kill -9 $(cat "$W/pids") 2>/dev/null
    ) </dev/null >/dev/null 2>&1 &
}

# The background processes started and not yet reaped (so their pids
# cannot have been reused): track PID adds one, untrack PID removes it.
TRACKED=""
track() {
    TRACKED="$1 $TRACKED"
}
untrack() {
    _keep=""
    for _p in $TRACKED; do
        [ "$_p" = "$1" ] || _keep="$_keep $_p"
    done
    TRACKED=$_keep
    if [ -f "$W/pids" ]; then
        grep -v -x -- "$1" "$W/pids" >"$W/pids.tmp" || true
        mv "$W/pids.tmp" "$W/pids"
    fi
}

# Kills the background processes still tracked (this shell's own, not
# yet reaped) and removes the work directory unless the test failed or
# KEEP is set.
kafka_cleanup() {
    rc=$?
    rm -f "$W/pids"
    for p in $TRACKED; do
        kill -9 "$p" 2>/dev/null || true
    done
    for p in $TRACKED; do
        wait "$p" 2>/dev/null || true
    done
    if [ "$rc" -ne 0 ] || [ -n "${KEEP:-}" ]; then
        echo "work directory kept: $W" >&2
    else
        rm -rf "$W"
    fi
}

# Prints a message and the logs of the run, then fails the test.
fail() {
    echo "FAIL: $*" >&2
    for f in "$W"/*.log; do
        [ -f "$f" ] || continue
        case $f in
        */stack-*.log) echo "---- $f" >&2; grep -E '^(Thread|#)' "$f" >&2 ;;
        *) echo "---- $f (last 40 lines)" >&2; tail -n 40 "$f" >&2 ;;
        esac
    done
    exit 1
}

# Milliseconds of a monotonic-enough clock (date +%s%N is GNU).
now_ms() {
    echo $(($(date +%s%N) / 1000000))
}

# The waits below are bounds for a hang, never a verdict on speed: each
# TIMEOUT_S is multiplied by TDM_WAIT_SCALE (default 5), so that a
# loaded machine (two suites at once beside other builds: the heaviest
# tests ran 20-30 times slower) does not fail them.  The watchdog
# (kafka_init) and the CTest timeouts are sized above the scaled waits.
WAIT_SCALE=${TDM_WAIT_SCALE:-5}
# Every wait also ends at the test's own deadline (DEADLINE_MS, set by
# kafka_init 30 s before the watchdog, and so before the CTest timeout):
# a hang then fails with the processes' logs (fail) instead of being
# killed without a word.
DEADLINE_MS=

# deadline_ms TIMEOUT_S: when a wait of TIMEOUT_S (scaled) begun now
# ends: the earlier of that and the test's deadline.
deadline_ms() {
    _d=$(($(now_ms) + $1 * 1000 * WAIT_SCALE))
    [ -z "$DEADLINE_MS" ] || [ "$_d" -lt "$DEADLINE_MS" ] || _d=$DEADLINE_MS
    echo "$_d"
}

# wait_until TIMEOUT_S DESCRIPTION COMMAND...: runs COMMAND every 50 ms
# until it succeeds; fails the test after TIMEOUT_S (scaled) seconds.
wait_until() {
    _t=$1
    _what=$2
    shift 2
    _end=$(deadline_ms "$_t")
    while ! "$@"; do
        if [ "$(now_ms)" -gt "$_end" ]; then
            fail "timed out waiting for: $_what (at most $((_t * WAIT_SCALE)) s, within the test's deadline)"
        fi
        sleep 0.05
    done
}

# wait_file FILE TIMEOUT_S: waits until FILE exists and is not empty.
wait_file() {
    wait_until "$2" "file $1" test -s "$1"
}

# Number of lines of the files given (0 for missing files).
count_lines() {
    _n=0
    for _f in "$@"; do
        if [ -f "$_f" ]; then
            _n=$((_n + $(wc -l <"$_f")))
        fi
    done
    echo "$_n"
}

_lines_at_least() {
    _want=$1
    shift
    [ "$(count_lines "$@")" -ge "$_want" ]
}

# wait_lines N TIMEOUT_S FILE...: waits until the files hold N lines
# together.
wait_lines() {
    _n=$1
    _t=$2
    shift 2
    wait_until "$_t" "$_n lines in $*" _lines_at_least "$_n" "$@"
}

_grep_count_at_least() {
    [ -f "$2" ] && [ "$(grep -E -c -- "$3" "$2" || true)" -ge "$1" ]
}

# wait_grep N TIMEOUT_S FILE REGEX: waits until N lines of FILE match.
wait_grep() {
    wait_until "$2" "$1 lines matching /$4/ in $3" _grep_count_at_least \
        "$1" "$3" "$4"
}

# start_mock TOPIC:PARTITIONS...: starts the mock cluster with 3 brokers
# and these topics (and the options in MOCK_OPTS, if set); sets BOOT to
# its bootstrap address.
start_mock() {
    _args=""
    for _t in "$@"; do
        _args="$_args --topic $_t"
    done
    # shellcheck disable=SC2086
    "$MOCK" --brokers 3 $_args ${MOCK_OPTS:-} --bootstrap-file "$W/bootstrap" \
        >"$W/mock.log" 2>&1 &
    MOCK_PID=$!
    track "$MOCK_PID"
    wait_file "$W/bootstrap" 10
    BOOT=$(cat "$W/bootstrap")
}

# produce TOPIC [tool options] FILE...: writes JSON lines to TOPIC.
produce() {
    _topic=$1
    shift
    "$TOOL" produce "$BOOT" "$_topic" "$@" 2>>"$W/tool.log" ||
        fail "producing to $_topic"
}

# consume TOPIC [--timestamps] > OUT: partition TAB key TAB value lines.
consume() {
    _topic=$1
    shift
    "$TOOL" consume "$BOOT" "$_topic" "$@" 2>>"$W/tool.log" ||
        fail "consuming $_topic"
}

# run_bg NAME JOB [tidemark run options]: starts `tidemark run` in the
# background with stderr (its log) in $W/NAME.log; sets LAST_PID.
run_bg() {
    _name=$1
    shift
    "$TM" run "$@" --quiet >"$W/$_name.stdout" 2>"$W/$_name.log" &
    LAST_PID=$!
    track "$LAST_PID"
    echo "$LAST_PID" >>"$W/pids"
}

# run_fg NAME JOB [options]: runs `tidemark run` to its end; fails the
# test when it does not exit 0 within 60 s.
run_fg() {
    _name=$1
    shift
    "$TM" run "$@" --quiet >"$W/$_name.stdout" 2>"$W/$_name.log" &
    _p=$!
    track "$_p"
    echo "$_p" >>"$W/pids"
    wait_pid "$_p" 60 || fail "tidemark run $_name exited with status $WAIT_RC"
}

# wait_pid PID TIMEOUT_S: waits for PID to exit (polling); returns its
# status through WAIT_RC and as the function's status.  Fails the test
# on timeout (TIMEOUT_S scaled as wait_until's).
wait_pid() {
    _end=$(deadline_ms "$2")
    while kill -0 "$1" 2>/dev/null; do
        # A zombie still answers kill -0; `wait` reaps it below.
        if [ -r "/proc/$1/stat" ] &&
            [ "$(cut -d' ' -f3 "/proc/$1/stat")" = Z ]; then
            break
        fi
        if [ "$(now_ms)" -gt "$_end" ]; then
            # Where it hangs, when gdb is there (fail prints *.log).
            if command -v gdb >/dev/null 2>&1; then
                gdb -p "$1" -batch -ex "thread apply all bt" \
                    >"$W/stack-$1.log" 2>&1 || true
            fi
            fail "process $1 still running after $(($2 * WAIT_SCALE)) s"
        fi
        sleep 0.05
    done
    WAIT_RC=0
    wait "$1" || WAIT_RC=$?
    untrack "$1"
    return "$WAIT_RC"
}

# stop_pid PID [SIGNAL] [TIMEOUT_S]: signals PID (TERM by default) and
# waits for it; WAIT_RC receives its exit status.
stop_pid() {
    kill "-${2:-TERM}" "$1" 2>/dev/null || true
    wait_pid "$1" "${3:-60}" || true
}

# assigned_count LOG: lines of a tidemark log saying partitions were
# assigned (the Kafka source logs one per assignment).
assigned_count() {
    if [ -f "$1" ]; then
        grep -E -i -w -c 'assigned' "$1" || true
    else
        echo 0
    fi
}

# same_lines A B: the two files hold the same multiset of lines; prints a
# diff of the sorted files otherwise and fails.
same_lines() {
    sort "$1" >"$W/.a.sorted"
    sort "$2" >"$W/.b.sorted"
    if ! cmp -s "$W/.a.sorted" "$W/.b.sorted"; then
        diff "$W/.a.sorted" "$W/.b.sorted" | head -n 40 >&2
        fail "$1 and $2 differ (as sorted lines)"
    fi
}

# values_of FILE: the value column of consume output (third field).
values_of() {
    cut -f3- "$1"
}

# job_kafka_source NAME TOPICS GROUP [extra YAML lines...]: prints the
# YAML of a Kafka source node (indented for sources:) with the test
# properties.
kafka_source_yaml() {
    _name=$1
    _topics=$2
    _group=$3
    shift 3
    cat <<EOF
  $_name:
    type: kafka
    brokers: "$BOOT"
    topics: $_topics
    group: $_group
    start: earliest
    kafka: $KPROPS
EOF
    for _l in "$@"; do
        echo "    $_l"
    done
}

# gen_clicks PARTITION N [USERS] [STEP_MS] [FROM_MS]: N click records of
# one partition as JSON lines {"user","ts","p"}.  Record k is at
# FROM + k*STEP + 100*PARTITION, every third one 900 ms earlier than
# that (out of order, but less than 1 s behind the maximum before it, so
# a bound of 1 s makes none late); users cycle through USERS names.
gen_clicks() {
    awk -v p="$1" -v n="$2" -v users="${3:-5}" -v step="${4:-700}" \
        -v from="${5:-$T0}" 'BEGIN {
        for (k = 0; k < n; k++) {
            ts = from + k * step + 100 * p - (k % 3 == 2 ? 900 : 0);
            printf "{\"user\":\"u%d\",\"ts\":%.0f,\"p\":%d}\n",
                   (k * 7 + p) % users, ts, p;
        }
    }'
}

# both_assigned LOG_A LOG_B: true when both processes logged an
# assignment (a group of two has formed).
both_assigned() {
    [ "$(assigned_count "$1")" -ge 1 ] && [ "$(assigned_count "$2")" -ge 1 ]
}

# far_records N FROM_MS: one record of user "far" at FROM_MS in each of
# partitions 0..N-1 (field p names the partition): it moves every
# partition's watermark past all test data, so every window before it
# fires while the job keeps running.
far_records() {
    awk -v n="$1" -v ts="$2" 'BEGIN {
        for (p = 0; p < n; p++)
            printf "{\"user\":\"far\",\"ts\":%.0f,\"p\":%d}\n", ts, p;
    }'
}

# member_yaml NAME GROUP M: writes $W/M.yaml - job NAME, the clicks topic
# read in consumer group GROUP with on_cancel stop and commits every
# $COMMIT_INTERVAL (default 200 ms), then what window_yaml (defined by
# the calling script) prints for out-M.jsonl.
member_yaml() {
    {
        echo "name: $1"
        echo "on_cancel: stop"
        echo "commit.interval: ${COMMIT_INTERVAL:-200ms}"
        echo "sources:"
        kafka_source_yaml clicks clicks "$2" \
            "schema: {user: string, ts: int64, p: int64}" \
            "timestamp.field: ts" \
            "watermark: {strategy: bounded, max_out_of_orderness: 1s}"
        window_yaml "out-$3.jsonl"
    } >"$W/$3.yaml"
}

# start_two_members NAME GROUP: member_yaml for a and b, starts both as
# members of the group and waits until both have partitions.  Sets pid_a
# and pid_b.
start_two_members() {
    member_yaml "$1" "$2" a
    member_yaml "$1" "$2" b
    run_bg a "$W/a.yaml"
    pid_a=$LAST_PID
    run_bg b "$W/b.yaml"
    pid_b=$LAST_PID
    # The mock's first assignment takes 3 s, a rebalance 3 s more.
    wait_until 30 "both members assigned" both_assigned "$W/a.log" \
        "$W/b.log"
}

# check_marked FILES...: the union of FILES against $W/ref.jsonl when
# repeats are allowed (docs/kafka.md, what a crash can duplicate):
# without the "update" member the same set of rows (no row missing, none
# partial), and no (user, window) with two rows whose "update" is false.
# Sets n_rep to the number of rows beyond the reference's ($n_ref).
check_marked() {
    cat "$@" >"$W/union.jsonl"
    sed 's/,"update":\(true\|false\)}$/}/' "$W/union.jsonl" |
        sort -u >"$W/union-set.jsonl"
    sed 's/,"update":\(true\|false\)}$/}/' "$W/ref.jsonl" >"$W/ref-set.jsonl"
    same_lines "$W/ref-set.jsonl" "$W/union-set.jsonl"
    grep '"update":false}$' "$W/union.jsonl" |
        sed 's/^{"user":"\([^"]*\)".*"window_start":\([0-9]*\),.*/\1 \2/' |
        sort | uniq -d >"$W/unmarked-dups.txt"
    [ ! -s "$W/unmarked-dups.txt" ] ||
        fail "repeated results not marked as updates (user, window start):" \
            "$(head -3 "$W/unmarked-dups.txt" | tr '\n' ' ')"
    n_rep=$(($(count_lines "$W/union.jsonl") - n_ref))
}

# window_yaml OUT: the jobs' window and sink, a tumbling 10 s count with
# the first and last timestamp per user written to $W/OUT (a script may
# define its own after sourcing this file).
window_yaml() {
    cat <<EOF
windows:
  w:
    from: clicks
    key_by: user
    window: {type: tumbling, size: 10s}
    aggregates: [count() as n, min(ts) as first, max(ts) as last]
    sink: out
sinks:
  out: {type: file, path: $W/$1}
EOF
}

# run_ref NAME PATH: the reference - job NAME over the clicks files PATH
# (a glob: one partition per file) with window_yaml's window, written to
# $W/ref.yaml and run; sets n_ref to its rows in $W/ref.jsonl.
run_ref() {
    {
        cat <<EOF
name: $1
sources:
  clicks:
    type: file
    path: $2
    schema: {user: string, ts: int64, p: int64}
    timestamp.field: ts
    watermark: {strategy: bounded, max_out_of_orderness: 1s}
EOF
        window_yaml ref.jsonl
    } >"$W/ref.yaml"
    run_fg ref "$W/ref.yaml"
    n_ref=$(count_lines "$W/ref.jsonl")
}
