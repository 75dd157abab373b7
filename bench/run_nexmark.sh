#!/bin/sh
# SPDX-License-Identifier: MIT
# run_nexmark.sh - NEXMark-W (bench/nexmark/nexmark_w.yaml): checks the
# engine's result multiset against the naive reference (bench/nexmark_ref.c)
# on a smaller run, then runs the full job (50 M events generated
# in-process) several times at parallelism 1 and 2 and prints events/s by
# the wall clock, events/s per busy core (CPU time) and peak RSS.
# A program, not a test: nothing here is registered with CTest.
#
#   sh bench/run_nexmark.sh [-r RUNS] [-e EVENTS] [-c CHECK_EVENTS]
#                           [-b BUILD_DIR]
#
# Defaults: 3 runs, 50,000,000 events, a 10,000,000-event check, build
# folder build-bench (RelWithDebInfo).  Needs /usr/bin/time.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
runs=3
events=50000000
check=10000000
build="$root/build-bench"
while getopts r:e:c:b:h opt; do
    case $opt in
    r) runs=$OPTARG ;;
    e) events=$OPTARG ;;
    c) check=$OPTARG ;;
    b) build=$OPTARG ;;
    *) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    esac
done
[ -x /usr/bin/time ] || { echo "run_nexmark.sh: /usr/bin/time is missing" >&2; exit 1; }

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" >/dev/null
cmake --build "$build" -j2 --target tidemark_cli nexmark_ref >/dev/null
tdm="$build/tidemark"
job="$root/bench/nexmark/nexmark_w.yaml"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# ---- Correctness: the engine's (auction, window, count) multiset equals
# the reference's, and the counts sum to the number of bids. ----
"$tdm" run "$job" --quiet --set "sources.events.generator.records=$check" \
    --set sinks.out.type=file --set "sinks.out.path=$tmp/engine.jsonl"
sed -E 's/.*"auction":([0-9]+),"n":([0-9]+),"window_start":([0-9]+),"window_end":([0-9]+).*/\1 \3 \4 \2/' \
    "$tmp/engine.jsonl" | sort > "$tmp/engine.txt"
"$build/nexmark_ref" "$check" 100000 10000 2>"$tmp/ref.err" | sort > "$tmp/ref.txt"
bids=$(awk '{print $2}' "$tmp/ref.err")
sum=$(awk '{s += $4} END {print s}' "$tmp/engine.txt")
if cmp -s "$tmp/engine.txt" "$tmp/ref.txt" && [ "$sum" = "$bids" ]; then
    echo "check: $check events, $bids bids, $(wc -l < "$tmp/ref.txt") rows: engine == reference, sum of counts == bids"
else
    echo "check: FAILED (engine rows $(wc -l < "$tmp/engine.txt"), reference rows $(wc -l < "$tmp/ref.txt"), sum $sum, bids $bids)"
    exit 1
fi

# ---- Throughput ----
printf '%-6s %8s %12s %12s %16s %10s\n' config run "wall s" "CPU s" "events/s (wall)" "RSS MB"
for p in 1 2; do
    i=1
    while [ $i -le "$runs" ]; do
        /usr/bin/time -f "%e %U %S %M" -o "$tmp/t" "$tdm" run "$job" --quiet 2>/dev/null \
            --parallelism $p --set "sources.events.generator.records=$events" >/dev/null
        read -r wall user sys rss < "$tmp/t"
        awk -v p="p$p" -v i="$i" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" -v e="$events" \
            'BEGIN { printf "%-6s %8d %12.2f %12.2f %16.0f %10.0f   (per busy core: %.0f)\n", p, i, w, u + s, e / w, r / 1024, e / (u + s) }'
        i=$((i + 1))
    done
done
