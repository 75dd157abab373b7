#!/bin/sh
# http.sh - `tidemark run --http` end to end: the server line on stderr,
# the REST routes and the Prometheus text of a live job, errors, the
# bearer token, --http-linger, and refused addresses.
#
# The job (tests/cli/jobs/stdin.yaml: counts per key in 10 s windows,
# on-event watermarks with out-of-orderness 0) reads a FIFO the script
# keeps open, so it runs until the script closes it.  Nothing waits for
# time to pass: every wait polls a condition (the server line, a
# counter) a bounded number of times.  Expected values, by hand: after
# a@1000, a@2000, b@15000 the source read 3 records and its watermark,
# like the window's, is 15000 - 1 = 14999; [0, 10000) fired (a: 2) and
# [10000, 20000) fires at the end (b: 1).
# Usage: http.sh TIDEMARK SOURCE_DIR HTTP_GET
. "$(dirname "$0")/lib.sh"
setup "$@"
HG=$3

. "$(dirname "$0")/http_lib.sh"

# ---- A live job ----
serve live --http 127.0.0.1:0
expect_in "server line" "$T/live.err" "tidemark: serving http://127.0.0.1:$PORT/ (job \"stdin\")"

printf '%s\n' '{"k":"a","ts":1000}' '{"k":"a","ts":2000}' \
    '{"k":"b","ts":15000}' >&3
poll "records read" "/jobs/stdin/metrics?get=in.0.numRecordsIn" \
    '"value":"3"'
poll "window watermark" "/jobs/stdin/metrics?get=w.0.currentInputWatermark" \
    '"value":"14999"'

get "jobs" 0 /jobs
expect_in "jobs" "$T/body" '{"jobs":[{"id":"stdin","name":"stdin","status":"RUNNING"}]}'
get "job" 0 /jobs/stdin
expect_in "job" "$T/body" '"state":"RUNNING"'
expect_in "job" "$T/body" '"edges":[{"from":"in","to":"w"},{"from":"w","to":"out"}]'
get "watermarks" 0 /jobs/stdin/vertices/w/watermarks
expect_in "watermarks" "$T/body" '{"id":"0.currentInputWatermark","value":"14999"}'
expect_in "watermarks" "$T/body" '{"id":"0.currentOutputWatermark","value":"14999"}'
get "partitions" 0 /jobs/stdin/partitions
expect_in "partitions" "$T/body" '"culprit":null'
expect_in "partitions" "$T/body" '"records":3'
get "late" 0 /jobs/stdin/late
expect_in "late" "$T/body" '"counts":{"dropped":0,"sideOutput":0,"latePanes":0}'
get "diagnosis" 0 /jobs/stdin/diagnosis
expect_in "diagnosis" "$T/body" '"findings":['
get "history" 0 /jobs/stdin/history
expect_in "history" "$T/body" '"samples":['
get "window" 0 '/jobs/stdin/windows?vertex=w&key=a&start=0&end=10000'
expect_in "window" "$T/body" '"fired":true'

get "prometheus" 0 /metrics -i
expect_in "prometheus" "$T/body" 'Content-Type: text/plain; version=0.0.4'
expect_in "prometheus" "$T/body" '# TYPE tidemark_num_records_in_total counter'
expect_in "prometheus" "$T/body" 'tidemark_num_records_in_total{job_name="stdin",operator="in",subtask="0"} 3'
expect_in "prometheus" "$T/body" 'tidemark_current_input_watermark_timestamp_seconds{job_name="stdin",operator="w",subtask="0"} 14.999'
# Prometheus' own linter, with no warning (names, _total, units).
get "prometheus body" 0 /metrics
promtool check metrics <"$T/body" >"$T/promtool" 2>&1 ||
    fail "promtool check metrics: $(cat "$T/promtool")"
[ ! -s "$T/promtool" ] || fail "promtool warns: $(cat "$T/promtool")"
get "page" 0 / -i
expect_in "page" "$T/body" 'Content-Type: text/html; charset=utf-8'

get "unknown path" 3 /nope
expect_in "unknown path" "$T/body.err" 'HTTP 404'
expect_in "unknown path" "$T/body" '{"error":'
get "unknown job" 3 /jobs/other
expect_in "unknown job" "$T/body.err" 'HTTP 404'
get "POST" 3 /jobs -X POST
expect_in "POST" "$T/body.err" 'HTTP 405'
get "bad escape" 3 /jobs/%zz
expect_in "bad escape" "$T/body.err" 'HTTP 400'
get "bad window" 3 '/jobs/stdin/windows?vertex=w&key=a&window=never'
expect_in "bad window" "$T/body.err" 'HTTP 400'

finish "live job"
expect_in "summary" "$T/live.err" 'job "stdin" finished after'
W0='"window_start":0,"window_end":10000'
W1='"window_start":10000,"window_end":20000'
OT='"timing":"on_time","pane":0,"update":false'
printf '%s\n' "{\"k\":\"a\",\"n\":2,$W0,$OT}" "{\"k\":\"b\",\"n\":1,$W1,$OT}" \
    >"$T/expected"
same_multiset "live job results" "$T/expected" "$T/live.out"

# ---- --http-linger and --http-token ----
serve linger --http=:0 --http-token s3cret --http-linger
expect_in "linger server line" "$T/linger.err" 'tidemark: serving http://127.0.0.1:'
printf '%s\n' '{"k":"a","ts":1000}' >&3
exec 3>&-
wait_for "linger line" "$T/linger.err" 'still serving on port'
poll "finished job" /jobs '"status":"FINISHED"' s3cret
get "no token" 3 /jobs
expect_in "no token" "$T/body.err" 'HTTP 401'
get "wrong token" 3 /jobs -t s3cre
expect_in "wrong token" "$T/body.err" 'HTTP 401'
get "final values" 0 /jobs/stdin -t s3cret
expect_in "final values" "$T/body" '"currentOutputWatermark":"end"'
kill -TERM $PID
set +e
wait $PID
rc=$?
set -e
[ "$rc" = 0 ] || fail "linger: exit code $rc after SIGTERM, expected 0"

# ---- Refused options ----
expect_exit "bad address" 2 "$TM" run tests/cli/jobs/stdin.yaml \
    --http nowhere </dev/null
expect_in "bad address" "$T/err" 'tidemark run: --http: address "nowhere"'
expect_exit "token without --http" 2 "$TM" run tests/cli/jobs/stdin.yaml \
    --http-token x </dev/null
expect_in "token without --http" "$T/err" '--http-token needs --http ADDR'
expect_exit "missing value" 2 "$TM" run tests/cli/jobs/stdin.yaml --http
# A port that is taken: a server of our own holds it.
serve second --http 127.0.0.1:0
expect_exit "port in use" 1 "$TM" run tests/cli/jobs/stdin.yaml \
    --http "127.0.0.1:$PORT" </dev/null
expect_in "port in use" "$T/err" "cannot listen on 127.0.0.1:$PORT"
finish "second server"
echo "http.sh: ok"
