#!/bin/sh
# tcp.sh - the TCP source (issue 18) against a scripted peer
# (tests/cli/tcp_peer.c) running tests/cli/jobs/tcp.yaml.  What the
# source sees is fixed by the order of the peer's steps: the peer prints
# its port only when it is ready, accepts block until the source connects,
# and a connect that must fail finds nobody listening (refused) or a full
# accept queue (timed out).  No step waits for time to pass.
#   close_reconnects  a clean close is not the end of the input: the source
#                     reconnects; a later reset with nobody listening fails
#                     the job naming both causes, and no window fires
#   cut_line          lines cut by a clean close and by a reset are dead-
#                     lettered as cut lines with their location, and never
#                     become records (CSV, where "c,17" would parse)
#   reset_then_end    tcp.on_close: end: a reset still reconnects, the
#                     clean close then ends the input (its last line
#                     needs no newline) and every window fires
#   errors            refused and timed-out connects, at the start and
#                     while reconnecting, and tcp.reconnect.timeout 0
#   settings          keys that cannot take effect are refused
# Usage: tcp.sh TIDEMARK SOURCE_DIR TCP_PEER CASE
. "$(dirname "$0")/lib.sh"
PEER=$3
CASE=$4
setup "$1" "$2"
PP=
trap 'if [ -n "$PP" ]; then kill "$PP" 2>/dev/null || :; fi; rm -rf "$T"' EXIT

# start_peer STEPS: starts the peer on STEPS (one per line) and sets PORT
# once it is ready.
start_peer() {
    printf '%s\n' "$1" >"$T/script"
    rm -f "$T/port"
    mkfifo "$T/port"
    "$PEER" "$T/script" >"$T/port" &
    PP=$!
    read -r PORT <"$T/port"
    ADDR=127.0.0.1:$PORT
}

# end_peer: the peer ran every step (it exited 0).
end_peer() {
    if ! wait "$PP"; then
        PP=
        fail "$CASE: the peer did not run every step"
    fi
    PP=
}

# stop_peer: the peer holds its listener until now.
stop_peer() {
    kill "$PP"
    wait "$PP" || :
    PP=
}

# run_job EXIT_CODE [--set ...]: runs the job against the peer.
run_job() {
    code=$1
    shift
    expect_exit "$CASE" "$code" "$TM" run tests/cli/jobs/tcp.yaml -q \
        --set sources.lines.tcp.address="$ADDR" \
        --set sinks.results.path="$T/results.jsonl" \
        --set sinks.bad.path="$T/bad.jsonl" "$@"
}

fast_reconnect="--set sources.lines.tcp.reconnect.timeout=2s
--set sources.lines.tcp.reconnect.backoff=10ms
--set sources.lines.tcp.reconnect.max_backoff=100ms"

case $CASE in
close_reconnects)
    start_peer 'ready
accept
send {"user":"a","ts":1000}\n{"user":"b","ts":2000}\n
close
accept
send {"user":"a","ts":3000}\n
unlisten
reset'
    # shellcheck disable=SC2086
    run_job 1 $fast_reconnect
    end_peer
    expect_in "$CASE" "$T/err" "tidemark: source \"lines\": tcp $ADDR: connection lost (closed by the peer); reconnecting"
    expect_in "$CASE" "$T/err" "tcp $ADDR: reconnected after 0 failed attempts (connection 2)"
    expect_in "$CASE" "$T/err" "source \"lines\": tcp $ADDR: connection lost (Connection reset by peer); no reconnection within tcp.reconnect.timeout (2000 ms, "
    expect_in "$CASE" "$T/err" ', the last: Connection refused)'
    expect_in "$CASE" "$T/err" 'failed after'
    expect_in "$CASE" "$T/err" '3 records in, 0 rows out'
    same_multiset "$CASE: no window fires" /dev/null "$T/results.jsonl"
    ;;
cut_line)
    start_peer 'ready
accept
send user,ts\na,1000\nb,2000\nc,17
close
accept
send user,ts\nc,3000\nd,4000\ne,1
reset
accept
send user,ts\nf,5000\n
unlisten
close'
    # shellcheck disable=SC2086
    run_job 1 --set sources.lines.format=csv $fast_reconnect
    end_peer
    expect_in "$CASE" "$T/err" '5 records in, 0 rows out'
    expect_in "$CASE" "$T/err" '2 bad records dead-lettered'
    printf '%s\t%s\t%s\n' \
        "$ADDR:4" 'line cut: the connection ended (closed by the peer) before its newline' 'c,17' \
        "$ADDR#2:4" 'line cut: the connection ended (Connection reset by peer) before its newline' 'e,1' \
        >"$T/bad.tsv"
    check_dead "$CASE" "$T/bad.tsv" "$T/bad.jsonl"
    ;;
reset_then_end)
    start_peer 'ready
accept
send {"user":"a","ts":1000}\n{"user":"b","ts":2000}\n{"user":"c","ts":17672
reset
accept
send {"user":"a","ts":3000}\n{"user":"c","ts":12000}\n{"user":"d","ts":4000}
close'
    # shellcheck disable=SC2086
    run_job 0 --set sources.lines.tcp.on_close=end $fast_reconnect
    end_peer
    w0='"window_start":0,"window_end":10000,"timing":"on_time","pane":0,"update":false}'
    w1='"window_start":10000,"window_end":20000,"timing":"on_time","pane":0,"update":false}'
    cat >"$T/expected.jsonl" <<EOF
{"user":"a","n":2,$w0
{"user":"b","n":1,$w0
{"user":"d","n":1,$w0
{"user":"c","n":1,$w1
EOF
    same_multiset "$CASE results" "$T/expected.jsonl" "$T/results.jsonl"
    printf '%s\t%s\t%s\n' "$ADDR:3" \
        'line cut: the connection ended (Connection reset by peer) before its newline' \
        '{\"user\":\"c\",\"ts\":17672' >"$T/bad.tsv"
    check_dead "$CASE" "$T/bad.tsv" "$T/bad.jsonl"
    expect_in "$CASE" "$T/err" "tcp $ADDR: reconnected after 0 failed attempts (connection 2)"
    ;;
errors)
    # Nobody listens: the first connect is not retried.
    start_peer 'unlisten
ready'
    end_peer
    run_job 1
    expect_in "$CASE refused" "$T/err" "source \"lines\": cannot connect to $ADDR: Connection refused"
    # A full accept queue: the connect hangs until tcp.connect_timeout.
    start_peer 'fill
ready
hold'
    run_job 1 --set sources.lines.tcp.connect_timeout=300ms
    stop_peer
    expect_in "$CASE timeout" "$T/err" "source \"lines\": cannot connect to $ADDR: connect timed out after 300 ms"
    # Reconnecting into a full accept queue: every attempt times out.
    start_peer 'ready
accept
send {"user":"a","ts":1000}\n
fill
reset
hold'
    run_job 1 --set sources.lines.tcp.connect_timeout=200ms \
        --set sources.lines.tcp.reconnect.timeout=500ms
    stop_peer
    expect_in "$CASE reconnect timeout" "$T/err" "source \"lines\": tcp $ADDR: connection lost (Connection reset by peer); no reconnection within tcp.reconnect.timeout (500 ms, "
    expect_in "$CASE reconnect timeout" "$T/err" ', the last: connect timed out after 200 ms)'
    # tcp.reconnect.timeout 0: a lost connection fails at once.
    start_peer 'ready
accept
send {"user":"a","ts":1000}\n
reset'
    run_job 1 --set sources.lines.tcp.reconnect.timeout=0
    end_peer
    expect_in "$CASE no reconnect" "$T/err" "source \"lines\": tcp $ADDR: connection lost (Connection reset by peer); not reconnecting (tcp.reconnect.timeout is 0)"
    ;;
settings)
    ADDR=127.0.0.1:9
    run_job 3 --set sources.lines.type=file --set sources.lines.path=x
    expect_in "$CASE" "$T/err" 'sources.lines.tcp.address: only tcp sources take it (type is not tcp)'
    expect_exit "$CASE" 3 "$TM" run tests/cli/jobs/stdin.yaml -q \
        --set sources.in.tcp.on_close=end
    expect_in "$CASE" "$T/err" 'tcp.on_close: only tcp sources take it (type is not tcp)'
    run_job 3 --set sources.lines.tcp.reconnect.timeout=0 \
        --set sources.lines.tcp.reconnect.backoff=1s
    expect_in "$CASE" "$T/err" 'tcp.reconnect.backoff: the source never reconnects (tcp.reconnect.timeout is 0)'
    run_job 3 --set sources.lines.tcp.reconnect.backoff=10s
    expect_in "$CASE" "$T/err" 'tcp.reconnect.max_backoff: 5000 ms is less than tcp.reconnect.backoff (10000 ms)'
    run_job 3 --set sources.lines.tcp.on_close=never
    expect_in "$CASE" "$T/err" 'expected one of reconnect, end, got "never"'
    ;;
*)
    fail "unknown case $CASE"
    ;;
esac
