#!/bin/sh
# live.sh - live settings end to end (issue 21): the out-of-orderness
# bound of a running job raised through each door - PATCH
# /jobs/:id/config, `tidemark set`, the config.watch file - and the rows
# each run writes compared with those the rules give (derived below by
# hand), and with a run where nothing changed; then the refusals.
#
# The job is tests/cli/jobs/live.yaml: one partition on standard input,
# 10 s windows, on-event watermarks, bound 0.  Records (user u, ts in s):
#   before the change: 1, 12     watermark 11.999: [0,10) fires (1 view)
#   the bound becomes 5 s (R-LV-4: applied before the next poll)
#   after it: 9   late: [0,10) is behind the watermark (dropped)
#             15  15 - 5.001 = 9.999 < 11.999: the watermark holds (R-LV-5)
#             18  12.999;  21  15.999
#             19  on time: [10,20) ends at 19.999 > 15.999
#             26  20.999: [10,20) fires with 12, 15, 18, 19 (4 views)
#   the end fires [20,30) with 21, 26 (2 views).
# Without the change, 19 comes after watermark 20.999 and is late:
# [10,20) has 3 views.  Processing time is a test clock
# (TDM_TEST_CLOCK_FILE), so the watched file's interval is the script's.
# Usage: live.sh TIDEMARK SOURCE_DIR HTTP_GET
. "$(dirname "$0")/lib.sh"
setup "$@"
HTTP_GET=$3
JOB=live

trap fifo_cleanup EXIT

TDM_TEST_CLOCK_FILE=$T/clock
export TDM_TEST_CLOCK_FILE
clock_ms 1000000

rec() {
    printf '{"user":"u","ts":%s}\n' "$1" >&3
}
feed_before() {
    rec 1000
    rec 12000
}
feed_after() {
    for ts in 9000 15000 18000 21000 19000 26000; do
        rec "$ts"
    done
}

# poll NAME WHAT COMMAND...: runs COMMAND every 50 ms until it succeeds;
# after 1,200 tries run NAME fails with WHAT (and its config and log).
poll() {
    _name=$1
    _what=$2
    shift 2
    tries=0
    until "$@"; do
        tries=$((tries + 1))
        [ "$tries" -le 1200 ] || { cat "$T/$_name.cfg" "$T/$_name.err" >&2 2>/dev/null; fail "$_name: $_what"; }
        sleep 0.05
    done
}
# config_has NAME KEY VALUE VALUE_MS ORIGIN CHANGES: GET /jobs/live/config
# (kept in $T/NAME.cfg) shows KEY at VALUE, set by ORIGIN, CHANGES
# changes, applied by every subtask.
config_has() {
    "$HTTP_GET" "$(port_of)" /jobs/live/config >"$T/$1.cfg" 2>/dev/null &&
        grep -q '"key":"'"$2"'","value":"'"$3"'","valueMs":'"$4"',"origin":"'"$5"'","changedAt":[0-9]*,"changes":'"$6"',"applied":true' "$T/$1.cfg"
}
# applied NAME ORIGIN: waits until the bound is 5 s, set by ORIGIN, and
# applied by every subtask.
applied() {
    poll "$1" "the change was never applied" config_has "$1" \
        sources.clicks.watermark.max_out_of_orderness 5s 5000 "$2" 1
}

views_row 1 0 10000 >"$T/changed.expected"
views_row 4 10000 20000 >>"$T/changed.expected"
views_row 2 20000 30000 >>"$T/changed.expected"
views_row 1 0 10000 >"$T/unchanged.expected"
views_row 3 10000 20000 >>"$T/unchanged.expected"
views_row 2 20000 30000 >>"$T/unchanged.expected"

# ---- No change: the reference the change must differ from ----
start none
feed_before
feed_after
finish none
views_rows none
same_multiset "no change" "$T/unchanged.expected" "$T/none.rows"
expect_in "no change" "$T/none.err" 'late records: 2 dropped'

# ---- The REST door ----
start rest
feed_before
seen rest 2
"$HTTP_GET" -X PATCH -d '{"sources.clicks.watermark.max_out_of_orderness": "5s"}' \
    "$(port_of)" /jobs/live/config >"$T/rest.patch"
applied rest rest
feed_after
finish rest
views_rows rest
same_multiset "REST door" "$T/changed.expected" "$T/rest.rows"
expect_in "REST door" "$T/rest.err" 'late records: 1 dropped'
expect_in "REST door" "$T/rest.err" \
    'live setting sources.clicks.watermark.max_out_of_orderness: 0ms -> 5s (rest)'

# ---- The CLI door ----
start cli
feed_before
seen cli 2
expect_exit "tidemark set" 0 "$TM" set "$url" \
    sources.clicks.watermark.max_out_of_orderness=5s
expect_in "tidemark set" "$T/out" \
    'sources.clicks.watermark.max_out_of_orderness = 5s (cli'
applied cli cli
feed_after
finish cli
views_rows cli
same_multiset "CLI door" "$T/changed.expected" "$T/cli.rows"

# ---- The watched file ----
# A bad file first: logged and ignored, the bound stays 0 ms.
printf 'sources.clicks.watermark.max_out_of_orderness: soon\n' >"$T/live-settings.yaml"
start file --set "config.watch=$T/live-settings.yaml" \
    --set config.watch.interval=10s
feed_before
seen file 2
tries=0
until grep -q 'config.watch: .*line 1: .*"soon" is not a duration' "$T/file.err"; do
    tries=$((tries + 1))
    [ "$tries" -le 1200 ] || { cat "$T/file.err" >&2; fail "file: the bad file was not reported"; }
    sleep 0.05
done
printf '# pushed by the configuration service\nsources.clicks.watermark.max_out_of_orderness: 5s\n' \
    >"$T/live-settings.yaml"
# Not read again before the interval has passed on the job's clock.
clock_ms 1010000
applied file file
feed_after
finish file
views_rows file
same_multiset "file door" "$T/changed.expected" "$T/file.rows"

# ---- Refusals: nothing changes ----
start refused
feed_before
seen refused 2
expect_exit "unknown key" 1 "$TM" set "$url" sources.clicks.watermark.bound=5s
expect_in "unknown key" "$T/err" 'HTTP 409'
expect_exit "bad value" 1 "$TM" set "$url" \
    sources.clicks.watermark.max_out_of_orderness=5s \
    sources.clicks.watermark.idle_timeout=-1s
expect_in "bad value" "$T/err" 'HTTP 400'
expect_exit "not live" 1 "$TM" set "$url" windows.views.window.size=1s
expect_in "not live" "$T/err" 'HTTP 409'
expect_in "not live" "$T/err" 'live: windows.views.allowed_lateness'
expect_exit "no group" 1 "$TM" set "$url" \
    sources.clicks.watermark.alignment.max_drift=1s
expect_in "no group" "$T/err" 'is in no alignment group'
set +e
"$HTTP_GET" -i -X DELETE "$(port_of)" /jobs/live/config >"$T/delete.out" 2>/dev/null
set -e
expect_in "DELETE" "$T/delete.out" 'HTTP/1.1 405'
expect_in "DELETE" "$T/delete.out" 'Allow: GET, HEAD, PATCH'
"$HTTP_GET" "$(port_of)" /jobs/live/config >"$T/refused.cfg"
expect_in "refusals" "$T/refused.cfg" '"changes":[]'
feed_after
finish refused
views_rows refused
same_multiset "refusals" "$T/unchanged.expected" "$T/refused.rows"

# ---- Allowed lateness (R-LV-8, winop_lateness.c L3-L5) ----
# Records 1, 12: watermark 11.999, [0,10) fires (1 view) and, with no
# lateness, is cleaned up.  Then allowed_lateness becomes 10 s:
#   5   [0,10) stays closed (L3: max 9.999 <= 11.999 - 0): late, dropped,
#       never a fresh [0,10) window with a partial count
#   15, 21   watermark 20.999: [10,20) fires (12, 15: 2 views) and is
#            kept until 29.999
#   17  17 + 10 > 20.999, [10,20) lives: it refires with 3 views
# Then it becomes 0 again: [10,20) is cleaned up at once (L4: 19.999 <=
# 20.999), so
#   18  is late (dropped), where 10 s would have refired with 4
#   26  the end fires [20,30) with 21, 26 (2 views).
# Without either change, 17 is late too: [10,20) keeps 2 views.
views_row 1 0 10000 >"$T/late.expected"
views_row 2 10000 20000 >>"$T/late.expected"
views_row 3 10000 20000 >>"$T/late.expected"
views_row 2 20000 30000 >>"$T/late.expected"
# wm_is MS: the window's input watermark is MS; wm_at NAME MS waits for it.
wm_is() {
    "$HTTP_GET" "$(port_of)" /jobs/live 2>/dev/null |
        grep -q "\"currentInputWatermark\":$1[,}]"
}
wm_at() {
    poll "$1" "the watermark never reached $2" wm_is "$2"
}
# set_lateness NAME VALUE VALUE_MS CHANGES: PATCHes the window's
# lateness to VALUE and waits until every subtask applied it.
set_lateness() {
    "$HTTP_GET" -X PATCH -d '{"windows.views.allowed_lateness": "'"$2"'"}' \
        "$(port_of)" /jobs/live/config >"$T/$1.patch"
    poll "$1" "lateness $2 was never applied" config_has "$1" \
        windows.views.allowed_lateness "$2" "$3" rest "$4"
}
start late
feed_before
seen late 2
wm_at late 11999
set_lateness late 10s 10000 1
# "Why has my window not fired": [0,10) is closed (cleanup at the
# watermark, not 9.999 + 10), [10,20) lives until 29.999.
"$HTTP_GET" "$(port_of)" \
    '/jobs/live/windows?vertex=views&key=u&start=0&end=10000' >"$T/late.w0"
expect_in "closed window" "$T/late.w0" '"cleanup":11999,'
"$HTTP_GET" "$(port_of)" \
    '/jobs/live/windows?vertex=views&key=u&start=10000&end=20000' >"$T/late.w1"
expect_in "raised window" "$T/late.w1" '"cleanup":29999,'
for ts in 5000 15000 21000 17000; do
    rec "$ts"
done
seen late 6
wm_at late 20999
set_lateness late 0ms 0 2
rec 18000
rec 26000
finish late
views_rows late
same_multiset "allowed lateness" "$T/late.expected" "$T/late.rows"
expect_in "allowed lateness" "$T/late.err" \
    'late records: 2 dropped, 0 to the late output, 1 late refires'
expect_in "allowed lateness" "$T/late.err" \
    'live setting windows.views.allowed_lateness: 0ms -> 10s (rest)'

# ---- Allowed lateness with retract output ----
# The retract memory keeps each result until its window's cleanup time,
# and moves with a live change.  Lateness 5 s from the job file:
#   1, 12, then 21 (watermark 20.999): [0,10) +1 is cleaned up (14.999);
#   [10,20) +1 (12), kept (and remembered) until 24.999
#   the lateness becomes 20 s: [10,20) lives until 39.999
#   26 (25.999): past 24.999, the memory of [10,20) must still be there
#   13: [10,20) refires: -1, then +2
#   the end fires [20,30) with 21, 26: +2.
# Had the memory been forgotten at 24.999, the refire would come
# without its -1 (a consumer would count 1 + 2).
printf '{"op":"%s","views":%s,"window_start":%s}\n' + 1 0 + 1 10000 \
    - 1 10000 + 2 10000 + 2 20000 >"$T/retract.expected"
start retract --set windows.views.output_mode=retract \
    --set windows.views.allowed_lateness=5s
for ts in 1000 12000 21000; do
    rec "$ts"
done
seen retract 3
wm_at retract 20999
set_lateness retract 20s 20000 1
rec 26000
rec 13000
finish retract
sed 's/.*"views":\([0-9]*\),"window_start":\([0-9]*\),.*"op":"\(.\)".*/{"op":"\3","views":\1,"window_start":\2}/' \
    "$T/retract.out" >"$T/retract.rows"
same_multiset "retract memory" "$T/retract.expected" "$T/retract.rows"
echo "live: ok"
