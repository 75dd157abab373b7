#!/bin/sh
# signal.sh - SIGTERM and SIGINT stop a running job cleanly: the source
# stops reading, the maximum watermark fires the open windows, the sinks
# flush, the summary says "stopped" and the exit code is 0.
#
# The job (tests/cli/jobs/stdin.yaml) reads JSON lines from a FIFO that
# stays open, so it would run for ever.  No sleeping: the test waits for
# the job's report of a bad record on stderr, which proves the job is
# running, and only then sends the signal.  Expected rows, by hand: the
# watermark after every record is ts - 1; the record at 15000 fires
# [0, 10000) with a's two records; [10000, 20000) holds b's record and
# fires when the signal ends the input.
# Usage: signal.sh TIDEMARK SOURCE_DIR
. "$(dirname "$0")/lib.sh"
setup "$@"

W0='"window_start":0,"window_end":10000'
W1='"window_start":10000,"window_end":20000'
OT='"timing":"on_time","pane":0,"update":false'
printf '%s\n' "{\"k\":\"a\",\"n\":2,$W0,$OT}" "{\"k\":\"b\",\"n\":1,$W1,$OT}" \
    >"$T/expected"

for sig in TERM INT; do
    rm -f "$T/in" "$T/out" "$T/rc" "$T/pid" "$T/rest"
    mkfifo "$T/in"
    {
        "$TM" run tests/cli/jobs/stdin.yaml -q <"$T/in" 2>&1 >"$T/out" &
        echo $! >"$T/pid"
        set +e
        wait $!
        echo $? >"$T/rc"
    } | {
        IFS= read -r first
        case "$first" in
        *"bad record at <stdin>:4"*) ;;
        *) echo "unexpected first line on stderr: $first" >&2 ;;
        esac
        kill -"$sig" "$(cat "$T/pid")"
        cat >"$T/rest"
    } &
    reader=$!
    exec 3>"$T/in"
    printf '%s\n' '{"k":"a","ts":1000}' '{"k":"a","ts":2000}' \
        '{"k":"b","ts":15000}' 'not json' >&3
    wait "$reader"
    exec 3>&-
    if [ "$(cat "$T/rc")" != 0 ]; then
        cat "$T/rest" >&2
        fail "SIG$sig: exit code $(cat "$T/rc"), expected 0"
    fi
    same_multiset "SIG$sig results" "$T/expected" "$T/out"
    expect_in "SIG$sig summary" "$T/rest" 'job "stdin" stopped after'
    expect_in "SIG$sig summary" "$T/rest" '3 records in, 2 rows out'
done
