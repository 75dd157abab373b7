#!/bin/sh
# diagnose.sh - `tidemark diagnose` against a live `tidemark run --http`:
# the job (tests/cli/jobs/stalled.yaml) reads JSON lines from a FIFO this
# script keeps open, with one partition per value of "p" and no idle
# timeout; partition p3 stops early (tests/cli/data/stalled.jsonl).  The
# diagnosis must name p3 as holding the watermark back, and single-window
# questions must answer "not fired, waiting for ..." and "fired".
#
# Expected values, by hand (watermark = a partition's max timestamp -
# 1 ms, the source's = the minimum over its partitions, on every record):
#   p1 ends at 10:20:00, p2 at 10:19:30, p3 at 10:02:13, so p3 (at
#   10:02:12.999) is 10:19:29.999 - 10:02:12.999 = 17m17s behind p2.
#   u42's [10:00, 10:05) holds 10:00:10, 10:01:00 and 10:04:00 and waits
#   for the watermark to pass 10:04:59.999; it is at 10:02:12.999.
#   u42's [09:55, 10:00) fired when p1's 10:00:10 lifted the minimum to
#   p2's 10:00:04.999 (p3 had not appeared yet).
# No sleeping for time to pass: the script polls for the conditions it
# needs, with a bounded number of tries.
# Usage: diagnose.sh TIDEMARK SOURCE_DIR
. "$(dirname "$0")/lib.sh"
setup "$@"

trap fifo_cleanup EXIT

expect_flat() {
    flat "$2" >"$T/flat"
    expect_in "$1" "$T/flat" "$3"
}

# ---- Without a server ----
expect_exit "no URL" 2 "$TM" diagnose
expect_in "no URL" "$T/err" "no URL given"
expect_exit "window without key" 2 "$TM" diagnose http://127.0.0.1:9 \
    --window 2026-12-02T10:00:00Z/5m
expect_in "window without key" "$T/err" "--window and --key go together"
expect_exit "bad window" 2 "$TM" diagnose http://127.0.0.1:9 \
    --window 2026-12-02T10:00:00Z --key u42
expect_in "bad window" "$T/err" "expected START/DURATION"
expect_exit "https" 2 "$TM" diagnose https://127.0.0.1:9
expect_in "https" "$T/err" "https is not supported"
# Port 1 on loopback: nothing listens there, the connection is refused.
expect_exit "refused" 1 "$TM" diagnose http://127.0.0.1:1
expect_in "refused" "$T/err" \
    "cannot connect to 127.0.0.1:1: connection refused"
expect_exit "help" 0 "$TM" help diagnose
expect_in "help" "$T/out" "usage: tidemark diagnose URL"

# ---- A live job ----
mkfifo "$T/in"
# The output files come before the FIFO in the redirections: opening the
# FIFO blocks until the `exec 3>` below, and the poll must find run.err
# (CI failure of 2026-12-03: the poll ran before the background shell had
# created run.err, sed failed, and `set -e` ended the script).
"$TM" run tests/cli/jobs/stalled.yaml --http 127.0.0.1:0 -q \
    >"$T/results" 2>"$T/run.err" <"$T/in" &
pid=$!
exec 3>"$T/in"
url=$(serving_url stalled "$T/run.err") || exit 1
cat tests/cli/data/stalled.jsonl >&3

# Poll until every record went through (the culprit is p3, 17m17s).
tries=0
# A critical finding makes diagnose exit 4.
until {
    "$TM" diagnose "$url" >"$T/diag" 2>"$T/diag.err"
    [ $? -eq 4 ]
} && flat "$T/diag" | grep -q -F "holds the watermark back by 17m17s"; do
    tries=$((tries + 1))
    if [ "$tries" -gt 2000 ]; then
        cat "$T/diag" "$T/diag.err" >&2
        fail "the diagnosis never named the stalled partition"
    fi
    sleep 0.05
done
expect_in "diagnosis" "$T/diag" 'Diagnosis of job "stalled" (running)'
expect_flat "diagnosis" "$T/diag" '1. [CRITICAL] Partition "p3" of source clicks holds the watermark back by 17m17s (HELD_BACK_PARTITION)'
expect_flat "diagnosis" "$T/diag" 'partition "p3" (index 2 of subtask 0 of source clicks) is at 2026-12-02T10:02:12.999Z; the next lowest partition, "p2" of clicks subtask 0, is at 2026-12-02T10:19:29.999Z'
expect_flat "diagnosis" "$T/diag" 'window views reads it: its lowest input watermark is 2026-12-02T10:02:12.999Z'
# Every record arrived at once: while p3's last record is under 10 s old
# it is skew (it still sends: no idle timeout, docs/diagnosis.md), and
# once it is older, silence (an idle timeout).  The unit tests pin each
# case with a test clock; here the wall clock decides, so either holds.
flat "$T/diag" >"$T/flat"
grep -q -F 'fix: Do not set an idle timeout for it: partition "p3" still sends' \
    "$T/flat" ||
    expect_in "diagnosis" "$T/flat" \
        'fix: Set sources.clicks.watermark.idle_timeout to'

# The same as JSON, for the job named explicitly.
expect_exit "json" 4 "$TM" diagnose "$url" --job stalled --json
expect_in "json" "$T/out" '"code":"HELD_BACK_PARTITION"'
expect_in "json" "$T/out" '"behindMs":1037000'
expect_exit "unknown job" 1 "$TM" diagnose "$url" --job nope
expect_in "unknown job" "$T/err" "HTTP 404"

# A pending window: not fired, and what it waits for.
expect_exit "pending window" 0 "$TM" diagnose "$url" \
    --window 2026-12-02T10:00:00Z/5m --key u42
expect_in "pending window" "$T/out" \
    'Window [2026-12-02T10:00:00.000Z, 2026-12-02T10:05:00.000Z) of key "u42" at views: not fired'
expect_flat "pending window" "$T/out" 'Not fired: waiting for the watermark of subtask 0 to pass 2026-12-02T10:04:59.999Z; it is at 2026-12-02T10:02:12.999Z, held back by channel 0 (source clicks#0)'
expect_flat "pending window" "$T/out" 'waiting for: the watermark of views subtask 0 to pass 2026-12-02T10:04:59.999Z'
expect_flat "pending window" "$T/out" 'the window holds 3 records now'

# An early window: fired (the start given in epoch ms and another zone).
expect_exit "fired window" 0 "$TM" diagnose "$url" --vertex views \
    --window 2026-12-02T10:55:00+01:00/5m --key u42
expect_in "fired window" "$T/out" \
    'Window [2026-12-02T09:55:00.000Z, 2026-12-02T10:00:00.000Z) of key "u42" at views: fired'
expect_flat "fired window" "$T/out" 'fired when the watermark of subtask 0 reached 2026-12-02T10:00:04.999Z.'
expect_exit "fired window ms" 0 "$TM" diagnose "$url" \
    --window 1796205300000/300000 --key u42 --json
expect_in "fired window ms" "$T/out" '"fired":true'
expect_exit "unknown vertex" 1 "$TM" diagnose "$url" --vertex nope \
    --window 2026-12-02T10:00:00Z/5m --key u42
expect_in "unknown vertex" "$T/err" "HTTP 404"

# End of input: the job flushes every window and exits 0.
exec 3>&-
set +e
wait "$pid"
rc=$?
set -e
pid=
[ "$rc" = 0 ] || fail "tidemark run exited with $rc"
expect_in "results" "$T/results" \
    '{"user":"u42","views":3,"window_start":1796205600000,"window_end":1796205900000'
