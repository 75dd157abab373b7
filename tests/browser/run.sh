#!/bin/sh
# run.sh - the browser test of the web page (ctest browser.page).  Runs
# tests/browser/job.yaml with `--http 127.0.0.1:0` in a temporary folder,
# feeds it through three FIFOs that this script holds open (so the job
# keeps running and serving), waits for the "serving http://..." line on
# stderr, runs page.test.mjs (headless Chromium through playwright-core)
# against that URL, then closes the FIFOs and checks that the job ends
# with exit code 0, wrote the three late clicks to its late output and
# the two sessions of sensors.
#
# The data (times relative to B, a whole minute five minutes ago, so the
# watermarks look live and stay far from the timestamp guard):
#   clicks p0   B+0 B+2s B+6s, then B+15s ... B+60s every 5 s (10 clicks),
#               then the late ones B+3s B+4s B+7s         16 records
#   clicks p1   B+1s B+5s B+12s, then nothing             3 records
#   beacons     B+30s B+40s, then nothing (idle after 300 ms)
#   archive     B+20s B+45s B+50s in a regular file (done at once)
#   sensors     B+15s B+20s, then nothing; watermark.fallback lag 1m,
#               interval 200ms, no idle timeout
# Hand-derived state (bounded, out-of-orderness 0: a partition's watermark
# is its highest timestamp - 1 ms): p0 B+60s-1, p1 B+12s-1, beacons
# B+40s-1, archive B+50s-1 (its source, all partitions done, is at the end
# of input); clicks' watermark, the minimum of p0 and p1, is B+12s-1, held
# back by p1 by 48 s.  per_user and per_part fire
# [B, B+10s) (2 rows each) and the three late clicks are late there
# (window end - 1 = B+10s-1 <= B+12s-1): per_user sends them to its late
# output, per_part drops them.  sensors' data watermark is B+20s-1; its
# fallback ticks every 200 ms of processing time, from 200 ms after the
# start, and lifts its output watermark to now - 1m, at least B+4m (now
# is at least B+5m), far above B+20s-1: from the first tick on, the
# fallback drives (watermarkSource 1) until the end.  Its partition's
# own watermark B+20s-1 is above p1's, and sensors feeds only
# sensor_sessions, which writes to a sink of its own (sessions): a part
# of the graph apart from clicks', so p1 stays the culprit, 48 s behind
# p0.  sensor_sessions (session gap 1h) closes no session before
# B+1h+15s: none of its records is late, whichever comes first, the
# records or the first tick; it counts 0 late by the fallback, and at
# the end of input writes one session per user (s1, s2).
# page.test.mjs checks the page for these.
# Once it has, it changes clicks' out-of-orderness bound twice (PATCH
# /jobs/:id/config, then `tidemark set`, TDM_WEB_TIDEMARK) and checks the
# chart's markers and the live settings list; with every record read and
# on-event watermarks, the new bound moves no watermark.
#
# The server requires a bearer token, which the page takes from #token=.
#
# Usage: run.sh BUILD_DIR (scripts/browser-deps.sh installs chromium and
# playwright-core first).  Environment: TDM_WEB_SCREENSHOT (default
# BUILD_DIR/artifacts/web-page.png), TDM_CHROMIUM (default
# /usr/bin/chromium), TDM_WEB_DOCS_SHOT=1 to also refresh docs/web-page.png.
set -eu
LC_ALL=C
export LC_ALL

if [ $# -ne 1 ]; then
    echo "usage: $0 BUILD_DIR" >&2
    exit 2
fi
BUILD=$(cd "$1" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
TM=$BUILD/tidemark
ART=$BUILD/artifacts
SHOT=${TDM_WEB_SCREENSHOT:-$ART/web-page.png}
CHROMIUM=${TDM_CHROMIUM:-/usr/bin/chromium}
PID=""

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

[ -x "$TM" ] || fail "$TM is not built"
[ -x "$CHROMIUM" ] || fail "no $CHROMIUM: run scripts/browser-deps.sh"
[ -d "$SRC/tests/browser/node_modules/playwright-core" ] ||
    fail "no playwright-core in tests/browser: run scripts/browser-deps.sh"
command -v node >/dev/null 2>&1 || fail "node is not installed"

T=$(mktemp -d "${TMPDIR:-/tmp}/tidemark-web.XXXXXX")
cleanup() {
    if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
        kill "$PID" 2>/dev/null || true
    fi
    rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
mkdir -p "$ART" "$(dirname "$SHOT")"

# B: a whole minute, five minutes before now, in epoch ms.
B=$((($(date +%s) / 60 * 60 - 300) * 1000))

cd "$T"
mkfifo clicks.fifo beacons.fifo sensors.fifo
for rec in u1:20000 u2:45000 u3:50000; do
    printf '{"user":"%s","ts":%d}\n' "${rec%%:*}" $((B + ${rec#*:}))
done >archive.jsonl

# Hold the FIFOs open for writing (read-write, so the open does not
# block); the job gets read-only ends and sees end of input only when
# these close.  Its own copies of 3, 4 and 5 are closed.
exec 3<>clicks.fifo 4<>beacons.fifo 5<>sensors.fifo
TOKEN=webtest-$$
"$TM" run "$SRC/tests/browser/job.yaml" --http 127.0.0.1:0 \
    --http-token "$TOKEN" --quiet \
    <clicks.fifo >stdout.txt 2>stderr.txt 3>&- 4>&- 5>&- &
PID=$!

# Wait for "tidemark: serving http://127.0.0.1:PORT/ (job "webtest")".
URL=""
deadline=$(($(date +%s) + 30))
while :; do
    URL=$(sed -n 's/^tidemark: serving \(http:[^ ]*\) .*/\1/p' stderr.txt |
          head -n 1)
    [ -n "$URL" ] && break
    kill -0 "$PID" 2>/dev/null ||
        fail "tidemark ended before serving: $(cat stderr.txt)"
    [ "$(date +%s)" -lt "$deadline" ] ||
        fail "no 'serving' line within 30 s: $(cat stderr.txt)"
    sleep 0.1
done
echo "run.sh: job serving at $URL (B=$B)"

# Feed: clicks in the order of the comment above, then the beacons and
# the sensors.
click() {
    printf '{"user":"%s","part":"%s","ts":%d}\n' "$1" "$2" $((B + $3)) >&3
}
click u1 p0 0
click u1 p1 1000
click u2 p0 2000
click u2 p1 5000
click u1 p0 6000
click u3 p1 12000
i=0
for off in 15000 20000 25000 30000 35000 40000 45000 50000 55000 60000; do
    i=$((i + 1))
    click "u$((i % 3 + 1))" p0 "$off"
done
click u1 p0 3000
click u2 p0 4000
click u3 p0 7000
printf '{"user":"u1","ts":%d}\n{"user":"u2","ts":%d}\n' \
    $((B + 30000)) $((B + 40000)) >&4
printf '{"user":"s1","ts":%d}\n{"user":"s2","ts":%d}\n' \
    $((B + 15000)) $((B + 20000)) >&5

rc=0
TDM_WEB_URL=$URL TDM_WEB_TOKEN=$TOKEN TDM_WEB_BASE=$B \
    TDM_WEB_SCREENSHOT=$SHOT TDM_CHROMIUM=$CHROMIUM TDM_WEB_TIDEMARK=$TM \
    node --test --test-reporter=spec --test-timeout=60000 \
    "$SRC/tests/browser/page.test.mjs" ||
    rc=$?

# End of input: the job flushes its windows and exits 0.
exec 3>&- 4>&- 5>&-
jrc=0
wait "$PID" || jrc=$?
PID=""
cp stderr.txt "$ART/web-tidemark.log"
[ "$rc" -eq 0 ] || fail "page.test.mjs failed (tidemark's stderr in" \
    "$ART/web-tidemark.log)"
[ "$jrc" -eq 0 ] || fail "tidemark exited with $jrc: $(cat stderr.txt)"
# The three late clicks reached per_user's late output.
[ "$(wc -l <late.jsonl)" -eq 3 ] || fail "late.jsonl: $(cat late.jsonl)"
for off in 3000 4000 7000; do
    grep -q "\"ts\":$((B + off))" late.jsonl ||
        fail "late.jsonl lacks ts B+$off: $(cat late.jsonl)"
done
# sensor_sessions closed its two sessions at the end of input, on time.
[ "$(wc -l <sessions.jsonl)" -eq 2 ] ||
    fail "sessions.jsonl: $(cat sessions.jsonl)"
if [ "${TDM_WEB_DOCS_SHOT:-0}" = 1 ]; then
    cp "$SHOT" "$SRC/docs/web-page.png"
fi
echo "run.sh: ok (screenshot $SHOT)"
