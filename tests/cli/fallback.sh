#!/bin/sh
# fallback.sh - the fallback watermark end to end (issue 21): a job whose
# only partition goes silent still closes its windows, within
# watermark.fallback.interval; /metrics, the REST API and `tidemark
# diagnose` say the fallback drives; a record the fallback made late is
# counted as such; the data takes the watermark back when it resumes;
# the rows differ from a run without the fallback exactly as the rules
# say (docs/live-settings.md, "The fallback watermark").
#
# The job is tests/cli/jobs/fallback.yaml: stdin, 10 s windows, periodic
# watermarks every 200 ms with bound 0, fallback lag 2 s every 5 s.
# Processing time is a test clock (TDM_TEST_CLOCK_FILE); the job starts
# at 1000 s, so the fallback ticks at 1005 s, 1010 s, ...  Timestamps:
#   995 s read at 1000 s         data watermark 994.999 after a tick
#   clock 1005 s                  the fallback tick: 1003 s > 994.999:
#                                 [990,1000) fires with 1 view, within
#                                 one interval of silence (F2)
#   998 s read                    late for [990,1000) under 1003 s, on
#                                 time under 994.999: late by the
#                                 fallback (F5), to the late output
#   1001 s read, clock 1005.2 s   the periodic tick: data 1000.999, below
#                                 the lift: it travels on (F3), the
#                                 output stays 1003 s
#   999 s read                    late under both: late, not by the
#                                 fallback
#   clock 1010 s                  the fallback tick: 1008 s; the diagnosis
#                                 says it has driven for 5 s
#   1010 s read at 1010 s         no tick until the clock moves
#   clock 1011 s                  the periodic tick: data 1009.999 >
#                                 1008 s: the data drives again (F3),
#                                 after 6 s of fallback; [1000,1010)
#                                 fires with 1 view
#   end                           [1010,1020) fires with 1 view
# Without the fallback, [990,1000) fires at 1005.2 s with 2 views (998 s
# is on time) and only 999 s is late.
# Usage: fallback.sh TIDEMARK SOURCE_DIR HTTP_GET
. "$(dirname "$0")/lib.sh"
setup "$@"
HTTP_GET=$3
JOB=fallback

trap fifo_cleanup EXIT

TDM_TEST_CLOCK_FILE=$T/clock
export TDM_TEST_CLOCK_FILE

rec() {
    printf '{"user":"u","ts":%s}\n' "$1" >&3
}
# until_get WHAT PATH PATTERN: polls GET PATH until it matches PATTERN
# (grep -E); the answer stays in $T/got.
until_get() {
    tries=0
    until "$HTTP_GET" "$(port_of)" "$2" >"$T/got" 2>/dev/null &&
        grep -Eq "$3" "$T/got"; do
        tries=$((tries + 1))
        [ "$tries" -le 1200 ] || { head -c 4000 "$T/got" >&2; fail "$1: $2 never showed $3"; }
        sleep 0.05
    done
}
# until_file WHAT FILE PATTERN: polls FILE until it matches PATTERN.
until_file() {
    tries=0
    until grep -Eq "$3" "$2" 2>/dev/null; do
        tries=$((tries + 1))
        [ "$tries" -le 1200 ] || { cat "$2" >&2; fail "$1: $2 never showed $3"; }
        sleep 0.05
    done
}

# ---- With the fallback ----
clock_ms 1000000
start on --set "sinks.late.path=$T/on.late"
# Standard input is not a replay: no warning.
if grep -q 'replays a' "$T/on.err"; then fail "stdin: a replay warning"; fi
rec 995000
seen on 1
clock_ms 1004000
clock_ms 1005000
# Un-stalled within one interval of silence: the window fires.
until_file "un-stall" "$T/on.out" '"views":1,"window_start":990000,'
until_get "driving (REST)" /jobs/fallback '"watermarkSource":1'
expect_in "data watermark" "$T/got" '"dataWatermark":994999'
expect_in "output watermark" "$T/got" '"currentOutputWatermark":1003000'
rec 998000
seen on 2
until_get "late by fallback" /jobs/fallback '"numLateRecordsByFallback":1'
until_file "late output" "$T/on.late" '"ts":998000'
# The data watermark rises under the lift: it travels on (F3).
rec 1001000
seen on 3
clock_ms 1005200
until_get "data under the lift" /jobs/fallback '"dataWatermark":1000999'
expect_in "still driving" "$T/got" '"currentOutputWatermark":1003000'
# Late under the data watermark too: late, not by the fallback.
rec 999000
seen on 4
until_file "late output" "$T/on.late" '"ts":999000'
until_get "late anyway" /jobs/fallback '"numLateRecordsSideOutput":2'
expect_in "late anyway" "$T/got" '"numLateRecordsByFallback":1'
clock_ms 1010000
until_get "second tick" /jobs/fallback '"currentOutputWatermark":1008000'
expect_in "stretch" "$T/got" '"fallbackDrivingMs":5000'
"$HTTP_GET" "$(port_of)" /metrics >"$T/prom"
expect_in "/metrics" "$T/prom" 'tidemark_watermark_source{job_name="fallback",operator="clicks",subtask="0"} 1'
grep -E '^tidemark_(data_watermark|fallback|num_late_records_by)' "$T/prom" >"$T/prom.fb"
expect_in "/metrics" "$T/prom.fb" 'tidemark_data_watermark_timestamp_seconds{job_name="fallback",operator="clicks",subtask="0"} 1000.999'
expect_in "/metrics" "$T/prom.fb" 'tidemark_fallback_driven_time_seconds_total{job_name="fallback",operator="clicks",subtask="0"} 5.000'
expect_in "/metrics" "$T/prom.fb" 'tidemark_num_late_records_by_fallback_total{job_name="fallback",operator="views",subtask="0"} 1'
expect_exit "diagnose" 0 "$TM" diagnose "$url"
flat "$T/out" >"$T/diag"
expect_in "diagnose" "$T/diag" \
    '[WARNING] The fallback watermark is driving source clicks: its data watermark has stayed behind for 5.0s (FALLBACK_DRIVING)'
expect_in "diagnose" "$T/diag" 'data watermark 1970-01-01T00:16:40.999Z, output watermark 1970-01-01T00:16:48.000Z'
expect_in "diagnose" "$T/diag" 'partition "stdin" holds the data watermark'
rec 1010000
seen on 5
clock_ms 1011000
until_get "hand back" /jobs/fallback '"watermarkSource":0'
expect_in "total" "$T/got" '"fallbackDrivenTime":6000'
expect_in "total" "$T/got" '"fallbackDrivingMs":0'
finish on
views_rows on
views_row 1 990000 1000000 >"$T/on.expected"
views_row 1 1000000 1010000 >>"$T/on.expected"
views_row 1 1010000 1020000 >>"$T/on.expected"
same_multiset "with the fallback" "$T/on.expected" "$T/on.rows"
[ "$(wc -l <"$T/on.late")" = 2 ] || fail "late output: $(cat "$T/on.late")"

# ---- Without it: the same input on the same clock ----
clock_ms 1000000
start off --set "sinks.late.path=$T/off.late" \
    --set sources.clicks.watermark.fallback.interval=0 \
    --set sources.clicks.watermark.fallback.lag=0
rec 995000
seen off 1
clock_ms 1005000
rec 998000
seen off 2
rec 1001000
seen off 3
clock_ms 1005200
# The tick that fires [990,1000) comes before 999 s, as in the run above.
until_get "tick" /jobs/fallback '"currentOutputWatermark":1000999'
rec 999000
seen off 4
clock_ms 1010000
rec 1010000
seen off 5
clock_ms 1011000
"$HTTP_GET" "$(port_of)" /jobs/fallback >"$T/got"
if grep -q '"watermarkSource"\|"numLateRecordsByFallback"' "$T/got"; then
    fail "no fallback: its metrics shown"
fi
finish off
views_rows off
views_row 2 990000 1000000 >"$T/off.expected"
views_row 1 1000000 1010000 >>"$T/off.expected"
views_row 1 1010000 1020000 >>"$T/off.expected"
same_multiset "without the fallback" "$T/off.expected" "$T/off.rows"
[ "$(wc -l <"$T/off.late")" = 1 ] && grep -q '"ts":999000' "$T/off.late" ||
    fail "without the fallback, late rows: $(cat "$T/off.late")"

# ---- A file replayed with the fallback: the log says what it means ----
printf '{"user":"u","ts":1000}\n' >"$T/in.jsonl"
expect_exit "replay" 0 "$TM" run tests/cli/jobs/fallback.yaml -q \
    --set sources.clicks.type=file --set "sources.clicks.path=$T/in.jsonl" \
    --set "sinks.late.path=$T/replay.late"
expect_in "replay warning" "$T/err" \
    'warning: source "clicks" replays a file with watermark.fallback on'
echo "fallback: ok"
