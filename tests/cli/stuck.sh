#!/bin/sh
# stuck.sh - the stuck cases of issue 22 end to end, each with the rule
# that must fire, its culprit, and what applying the printed fix does:
#   A. data stopped, no idle timeout: STALLED_WATERMARK (critical), no
#      idle timeout offered (every partition is silent); the fix, the
#      end of input, fires the window.
#   B. a record 26 minutes in the future: WATERMARK_AHEAD (critical) for
#      its partition, with a timestamp_guard fix; run again with that
#      fix, the same records give the full count and nothing late.
#   C. skew, one partition 5 minutes behind but still sending:
#      HELD_BACK_PARTITION naming it, and no idle timeout advised.
#   D. one partition silent, no idle timeout: HELD_BACK_PARTITION with an
#      idle timeout fix; run again with it, the window fires while the
#      input is still open.
#   E. a skewed join input (tests/cli/jobs/skew_join.yaml): payments 10
#      minutes behind the orders but still arriving: HELD_BACK_PARTITION
#      naming the payments source, read by the join, and no idle timeout.
# (A slow sink, the sixth case, is tests/cli/backpressure.sh.)
#
# Processing time is a test clock (TDM_TEST_CLOCK_FILE, testhooks.h): the
# file holds the milliseconds the job reads as "now", so that silence and
# "ahead of processing time" are set by the script, not by the machine's
# speed.  The job is tests/cli/jobs/stalled.yaml (JSON lines on standard
# input, one partition per value of "p", 5-minute windows, on-event
# watermarks with no out-of-orderness, no idle timeout).  The script
# polls for the conditions it needs, with a bounded number of tries.
# Usage: stuck.sh TIDEMARK SOURCE_DIR HTTP_GET TCP_PEER
. "$(dirname "$0")/lib.sh"
setup "$@"
HTTP_GET=$3
TCP_PEER=$4

trap fifo_cleanup EXIT

TDM_TEST_CLOCK_FILE=$T/clock
export TDM_TEST_CLOCK_FILE

# at HH:MM:SS: epoch ms of 2026-12-02THH:MM:SSZ.
at() {
    h=${1%%:*}
    r=${1#*:}
    m=${r%%:*}
    s=${r#*:}
    echo $((1796169600000 + ((1${h} - 100) * 3600 + (1${m} - 100) * 60 + (1${s} - 100)) * 1000))
}

JOB=stalled

# clock HH:MM:SS: clock_ms (lib.sh) at a time of day.
clock() {
    clock_ms "$(at "$1")"
}

# rec USER P HH:MM:SS: one record on the job's input.
rec() {
    printf '{"user":"%s","p":"%s","ts":"2026-12-02T%sZ"}\n' "$1" "$2" "$3" >&3
}

# diag_until NAME CODE EXIT: polls `tidemark diagnose` until it reports
# CODE and exits with EXIT; the report (one line) is in $T/NAME.diag.
diag_until() {
    tries=0
    until {
        "$TM" diagnose "$url" >"$T/$1.d" 2>"$T/$1.derr"
        [ $? -eq "$3" ]
    } && grep -q "($2)" "$T/$1.d"; do
        tries=$((tries + 1))
        if [ "$tries" -gt 1200 ]; then
            cat "$T/$1.d" "$T/$1.derr" >&2
            fail "$1: the diagnosis never reported $2"
        fi
        sleep 0.05
    done
    flat "$T/$1.d" >"$T/$1.diag"
}

no_idle_advice() {
    if grep -q 'Set sources.clicks.watermark.idle_timeout' "$T/$1.diag"; then
        cat "$T/$1.diag" >&2
        fail "$1: an idle timeout was advised"
    fi
}

# ---- A. Data stopped, no idle timeout ----
clock 10:06:00
start a
rec u1 p1 10:00:10
rec u1 p2 10:01:00
rec u1 p1 10:03:00
rec u1 p2 10:04:00
seen a 4
clock 10:06:30 # 30 s without a record on any partition
diag_until a STALLED_WATERMARK 4
expect_in "A" "$T/a.diag" '[CRITICAL]'
expect_in "A" "$T/a.diag" '(STALLED_WATERMARK)'
no_idle_advice a
expect_in "A" "$T/a.diag" 'end of input'
# The window question says the same.
expect_exit "A window" 0 "$TM" diagnose "$url" \
    --window 2026-12-02T10:00:00Z/5m --key u1
flat "$T/out" >"$T/a.win"
expect_in "A window" "$T/a.win" 'Not fired: waiting for the watermark'
expect_in "A window" "$T/a.win" '(STALLED_WATERMARK)'
# The fix: the end of input fires the window.
finish a
expect_in "A fixed" "$T/a.out" \
    '{"user":"u1","views":4,"window_start":1796205600000,"window_end":1796205900000'

# ---- B. A record in the future ----
feed_b() {
    rec u1 p1 10:00:10
    rec u1 p1 10:01:00
    rec u2 p1 10:31:00 # 26 minutes ahead of processing time (10:05)
    rec u1 p1 10:02:00
    rec u1 p1 10:03:00
}
clock 10:05:00
start b
feed_b
seen b 5
diag_until b WATERMARK_AHEAD 4
expect_in "B" "$T/b.diag" \
    '[CRITICAL] Partition "p1" of source clicks has a watermark 25m59s ahead of processing time (WATERMARK_AHEAD)'
# The record is named by its location and timestamp (R-DX-A2).
expect_in "B" "$T/b.diag" \
    'a record that moved it: <stdin>:3, timestamp 2026-12-02T10:31:00.000Z, 26m0s ahead of processing time'
fix=$(sed -n 's/.*(--set \(timestamp_guard=[^)]*\)).*/\1/p' "$T/b.diag")
[ -n "$fix" ] || fail "B: no --set in the fix: $(cat "$T/b.diag")"
finish b
# Without the fix two of u1's four records were dropped as late.
expect_in "B" "$T/b.err" 'late records: 2 dropped'
# With it: the future record moves no watermark, u1's window counts all
# four, nothing is late.
start b2 --set "$fix"
feed_b
seen b2 5
finish b2
expect_in "B fixed" "$T/b2.out" \
    '{"user":"u1","views":4,"window_start":1796205600000,"window_end":1796205900000'
expect_in "B fixed" "$T/b2.err" 'late records: 0 dropped'

# ---- C. Skew: a partition behind but still sending ----
clock 10:20:00
start c
rec u1 p1 10:15:00
rec u1 p2 10:10:00
rec u1 p1 10:19:00
rec u1 p2 10:14:00
seen c 4
diag_until c HELD_BACK_PARTITION 4
expect_in "C" "$T/c.diag" 'Partition "p2" of source clicks holds the watermark back by 5m'
expect_in "C" "$T/c.diag" 'fix: Do not set an idle timeout for it: partition "p2" still sends'
no_idle_advice c
finish c

# ---- D. One partition silent, no idle timeout ----
feed_d1() {
    rec u1 p3 10:02:00
    rec u1 p1 10:03:00
    rec u1 p2 10:04:00
}
feed_d2() {
    rec u1 p1 10:08:00
    rec u1 p2 10:09:00
}
clock 10:10:00
start d
feed_d1
seen d 3
clock 10:11:00 # p3 silent from now on; p1 and p2 send
feed_d2
seen d 5
diag_until d HELD_BACK_PARTITION 4
expect_in "D" "$T/d.diag" 'Partition "p3" of source clicks holds the watermark back'
fix=$(sed -n 's/.*(--set \(sources\.clicks\.watermark\.idle_timeout=[^)]*\)).*/\1/p' \
    "$T/d.diag")
[ -n "$fix" ] || fail "D: no idle timeout in the fix: $(cat "$T/d.diag")"
finish d
# With the fix, the same input: p3 is left out once silent for the
# timeout, so [10:00, 10:05) fires with the input still open.  Idleness
# is checked as Flink's IdlenessTimer does it, at each periodic check:
# the first silent check starts the countdown, a later one past the
# timeout marks the partition idle; so processing time moves on in 10 s
# steps until the window fires (each step is a fresh reading of the test
# clock for the next check; how many checks fall in a step does not
# change the outcome).
clock 10:10:00
start d2 --set "$fix"
feed_d1
seen d2 3
clock 10:11:00
feed_d2
seen d2 5
now=$(at 10:11:00)
tries=0
until grep -q '"window_start":1796205600000' "$T/d2.out"; do
    tries=$((tries + 1))
    [ "$tries" -le 600 ] || fail "D fixed: the window never fired"
    now=$((now + 10000))
    clock_ms "$now"
    sleep 0.05
done
finish d2
expect_in "D fixed" "$T/d2.out" \
    '{"user":"u1","views":3,"window_start":1796205600000,"window_end":1796205900000'

# ---- E. A skewed join input ----
JOB=skew_join
clock 10:20:00
{
    echo ready
    echo accept
    for m in 00 01 02 03 04 05; do
        printf 'send {"id":"o%s","ts":"2026-12-02T10:%s:00Z"}\\n\n' "$m" "$m"
    done
    echo hold
} >"$T/peer.script"
"$TCP_PEER" "$T/peer.script" >"$T/peer.port" 2>"$T/peer.err" &
peer=$!
tries=0
until [ -s "$T/peer.port" ]; do
    tries=$((tries + 1))
    [ "$tries" -le 1200 ] || fail "E: the TCP peer never said its port"
    sleep 0.05
done
start e --set "sources.payments.tcp.address=127.0.0.1:$(cat "$T/peer.port")"
for m in 10 12 14 16 18; do
    printf '{"id":"o%s","ts":"2026-12-02T10:%s:00Z"}\n' "$m" "$m" >&3
done
seen e 5 1 # the orders
seen e 6 1 # the payments
diag_until e HELD_BACK_PARTITION 4
expect_in "E" "$T/e.diag" 'of source payments holds the watermark back by'
expect_in "E" "$T/e.diag" 'join paid reads it'
expect_in "E" "$T/e.diag" 'fix: Do not set an idle timeout for it'
no_idle_advice e
# The end of both inputs: the peer closes (tcp.on_close: end), then
# standard input.
kill "$peer" 2>/dev/null || true
wait "$peer" 2>/dev/null || true
peer=
finish e
echo "stuck: ok"
