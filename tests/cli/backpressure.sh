#!/bin/sh
# backpressure.sh - the stuck case "a slow sink" end to end (issue 22):
# tests/cli/jobs/slow_sink.yaml writes its results to standard output,
# here a FIFO that this script holds open but does not read, so the sink
# blocks once the pipe is full, the window's queue fills and the source
# waits.  While it is stuck:
#   - the metrics say so in time, as Flink does: the source is
#     backpressured 500 ms or more of every second
#     (tidemark_back_pressured_time_ratio 0.5 or more), and the window
#     spends its busy time in the sink (tidemark_sink_time_ratio);
#   - `tidemark diagnose` reports BACKPRESSURE with the window as the
#     culprit and the sink in its fix, and no stalled watermark or idle
#     timeout (the partition is not silent, its reader is blocked);
#   - the window question answers (200), for the blocked subtask from its
#     published figures, where it used to answer 503.
# Then the fix is applied (the pipe is read) and the job must finish with
# exactly the rows of a run whose sink never blocked.
# Time: the script polls for the conditions it needs, with a bounded
# number of tries; what it asserts does not depend on the machine's
# speed (the sink stays blocked until the script reads it).
# Usage: backpressure.sh TIDEMARK SOURCE_DIR
. "$(dirname "$0")/lib.sh"
setup "$@"

pid=
rpid=
cleanup() {
    exec 4>&- 2>/dev/null || true
    for p in $pid $rpid; do
        kill "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    rm -rf "$T"
}
trap cleanup EXIT

# The reference: the same job into a file.
"$TM" run tests/cli/jobs/slow_sink.yaml -q >"$T/ref.jsonl" 2>"$T/ref.err" ||
    fail "the reference run failed: $(cat "$T/ref.err")"
[ "$(wc -l <"$T/ref.jsonl")" -gt 1000 ] || fail "the reference is too short"

# The slow sink: a FIFO held open for reading and writing (so opening it
# does not wait), never read until the fix.
mkfifo "$T/out.fifo"
exec 4<>"$T/out.fifo"
"$TM" run tests/cli/jobs/slow_sink.yaml --http 127.0.0.1:0 -q \
    2>"$T/run.err" >"$T/out.fifo" &
pid=$!
url=$(serving_url slow_sink "$T/run.err") || exit 1

# Poll until the diagnosis names the backpressure (the rates cover the
# last one to two seconds, so this takes a second or more).
tries=0
until "$TM" diagnose "$url" --json >"$T/diag.json" 2>"$T/diag.err" &&
    grep -q '"code":"BACKPRESSURE"' "$T/diag.json"; do
    tries=$((tries + 1))
    if [ "$tries" -gt 1200 ]; then
        cat "$T/diag.json" "$T/diag.err" >&2
        fail "the diagnosis never reported BACKPRESSURE"
    fi
    sleep 0.05
done
expect_exit "diagnosis" 0 "$TM" diagnose "$url"
flat "$T/out" >"$T/diag"
expect_in "diagnosis" "$T/diag" \
    '[WARNING] counts subtask 0 cannot keep up with its input (BACKPRESSURE)'
expect_in "diagnosis" "$T/diag" 'fix: Speed up sink out: counts subtask 0 spends'
expect_in "diagnosis" "$T/diag" 'clicks subtask 0 is backpressured'
if grep -q -e STALLED_WATERMARK -e idle_timeout "$T/diag"; then
    cat "$T/diag" >&2
    fail "a blocked reader was taken for a silent partition"
fi

# The metrics, as Prometheus reads them.
HTTP_GET=${HTTP_GET:-}
if [ -n "$HTTP_GET" ]; then
    port=$(port_of)
    "$HTTP_GET" "$port" /metrics >"$T/metrics" ||
        fail "GET /metrics failed"
    # ratio NAME OPERATOR: the series' value in thousandths.
    ratio() {
        awk -v n="$1{" -v op="operator=\"$2\"" \
            'index($1, n) == 1 && index($1, op) { printf "%d\n", $2 * 1000 }' \
            "$T/metrics"
    }
    bp=$(ratio tidemark_back_pressured_time_ratio clicks)
    [ -n "$bp" ] && [ "$bp" -ge 500 ] ||
        fail "clicks is not backpressured in /metrics: '$bp'"
    sk=$(ratio tidemark_sink_time_ratio counts)
    [ -n "$sk" ] && [ "$sk" -ge 500 ] ||
        fail "counts does not spend its time in its sink: '$sk'"
    expect_in "metrics" "$T/metrics" 'tidemark_back_pressured_time_seconds_total{'
fi

# The window question answers while the subtask is blocked: the first
# window of the reference, due by the watermark.
first=$(head -n 1 "$T/ref.jsonl")
key=$(echo "$first" | sed 's/.*"user":"\([^"]*\)".*/\1/')
start=$(echo "$first" | sed 's/.*"window_start":\([0-9]*\).*/\1/')
expect_exit "window question" 0 "$TM" diagnose "$url" \
    --window "$start/1000" --key "$key"
expect_in "window question" "$T/out" 'at counts: blocked (backpressure)'
flat "$T/out" >"$T/win"
expect_in "window question" "$T/win" 'Due: the watermark of subtask 0'
expect_in "window question" "$T/win" 'blocked for'
expect_exit "window question json" 0 "$TM" diagnose "$url" \
    --window "$start/1000" --key "$key" --json
expect_in "window question json" "$T/out" '"fired":null'

# The fix: read the pipe.  The job drains, finishes and exits 0 with the
# reference's rows, none lost or repeated.  The reader must not inherit
# descriptor 4 (a writer of the FIFO: it would never see the end).
cat "$T/out.fifo" >"$T/results" 4>&- &
rpid=$!
exec 4>&-
set +e
wait "$pid"
rc=$?
set -e
pid=
[ "$rc" = 0 ] || fail "tidemark run exited with $rc: $(cat "$T/run.err")"
wait "$rpid"
rpid=
same_multiset "rows after the sink caught up" "$T/ref.jsonl" "$T/results"
echo "backpressure: ok"
