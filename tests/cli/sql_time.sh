#!/bin/sh
# SPDX-License-Identifier: MIT
# sql_time.sh - a SQL job's watermarks in processing time: periodic
# emission and an idle partition (tests/cli/sql/views_stdin.sql: stdin,
# two partitions p1 and p2 by the field `part`, watermark exactly max -
# 1 s, emitted every 200 ms, idle after 2 s of silence, 10 s windows).
# Processing time is a test clock (TDM_TEST_CLOCK_FILE), records go in
# through a FIFO, and each step waits until the job has taken them
# (GET /jobs/views), so no verdict depends on the machine's speed:
#   clock 1000 s     p1 5000, 15000, 8000; p2 6000 - no tick yet, so
#                    8000 is on time although 15000 came first (with
#                    on-event watermarks p1 would be at 14000 and
#                    8000 late)
#   clock 1000.2 s   tick: p1 14000, p2 5000: the minimum is 5000
#   p2 5500          on time (5000 < 9999)
#   clock 1000.4 s   tick; p2 is silent from here
#   clock 1001, 1002, 1003 s: p1 15500 after each (p1 stays active)
#   ...              p2 is idle once more than 2 s passed since its
#                    countdown began: the watermark is p1's, 14500, and
#                    [0, 10000) fires with 4 views (5000 8000 6000 5500)
#                    while the job runs
#   p1 9000          late for [0, 10000): dropped and counted
#   end of input     [10000, 20000) fires: 15000 and three 15500 = 4
# Usage: sql_time.sh TIDEMARK SOURCE_DIR HTTP_GET
. "$(dirname "$0")/lib.sh"
setup "$@"
HTTP_GET=$3
JOB=views
trap fifo_cleanup EXIT
TDM_TEST_CLOCK_FILE=$T/clock
export TDM_TEST_CLOCK_FILE
clock_ms 1000000

mkfifo "$T/in"
"$TM" sql tests/cli/sql/views_stdin.sql --http 127.0.0.1:0 -q \
    >"$T/run.out" 2>"$T/run.err" <"$T/in" &
pid=$!
exec 3>"$T/in"
url=$(serving_url views "$T/run.err") || exit 1

rec() {
    printf '{"user":"u","part":"%s","ts_ms":%s}\n' "$1" "$2" >&3
}

rec p1 5000
rec p1 15000
rec p1 8000
rec p2 6000
seen run 4
clock_ms 1000200
rec p2 5500
seen run 5
clock_ms 1000400
n=5
for t in 1001000 1002000 1003000; do
    clock_ms $t
    rec p1 15500
    n=$((n + 1))
    seen run $n
done
# p2 goes idle within a few ticks: step the clock until the window fires.
t=1003000
tries=0
until grep -q '"window_start":0,' "$T/run.out"; do
    tries=$((tries + 1))
    [ $tries -le 4000 ] || fail "[0, 10000) never fired: $(cat "$T/run.err")"
    if [ $t -lt 1005000 ]; then
        t=$((t + 200))
        clock_ms $t
    fi
    sleep 0.01
done
rec p1 9000
seen run 9
finish run
printf '%s\n' '{"window_start":0,"window_end":10000,"views":4}' \
    '{"window_start":10000,"window_end":20000,"views":4}' >"$T/want"
same_multiset "the views" "$T/want" "$T/run.out"
expect_in "the late record" "$T/run.err" "late records: 1 dropped"
echo "sql_time: ok"
