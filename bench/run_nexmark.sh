#!/bin/sh
# SPDX-License-Identifier: MIT
# run_nexmark.sh - the NEXMark suite (bench/nexmark/*.yaml): NEXMark-W
# (nexmark_w.yaml), q8 (q8.yaml) and q11 (q11.yaml).  Per query it first
# checks the engine's result multiset against the naive reference
# (bench/nexmark_ref.c) on a smaller run, then runs the full job several
# times at parallelism 1 and 2 and prints events/s by the wall clock,
# events/s per busy core (CPU time) and peak RSS.  Events are those of the
# NEXMark stream (persons, auctions and bids), whatever the job keeps.
# A program, not a test: nothing here is registered with CTest.
#
#   sh bench/run_nexmark.sh [-r RUNS] [-e EVENTS] [-c CHECK_EVENTS]
#                           [-b BUILD_DIR] [-q "w q8 q11"]
#
# Defaults: 3 runs, 50,000,000 events, a 10,000,000-event check, build
# folder build-bench (RelWithDebInfo), all three queries.  Needs
# /usr/bin/time.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
runs=3
events=50000000
check=10000000
build="$root/build-bench"
queries="w q8 q11"
while getopts r:e:c:b:q:h opt; do
    case $opt in
    r) runs=$OPTARG ;;
    e) events=$OPTARG ;;
    c) check=$OPTARG ;;
    b) build=$OPTARG ;;
    q) queries=$OPTARG ;;
    *) sed -n '3,17p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    esac
done
[ -x /usr/bin/time ] || { echo "run_nexmark.sh: /usr/bin/time is missing" >&2; exit 1; }
for q in $queries; do
    case $q in
    w | q8 | q11) ;;
    *) echo "run_nexmark.sh: unknown query \"$q\" (w, q8, q11)" >&2; exit 2 ;;
    esac
done

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" >/dev/null
cmake --build "$build" -j2 --target tidemark_cli nexmark_ref >/dev/null
tdm="$build/tidemark"
ref="$build/nexmark_ref"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export LC_ALL=C

# The job file of query $1.
job_of() {
    case $1 in
    w) echo "$root/bench/nexmark/nexmark_w.yaml" ;;
    *) echo "$root/bench/nexmark/$1.yaml" ;;
    esac
}

# --set options making query $1 generate $2 events (every source of the
# job reads the same stream).
records_of() {
    case $1 in
    w) echo "--set sources.events.generator.records=$2" ;;
    q8) echo "--set sources.persons.generator.records=$2 --set sources.auctions.generator.records=$2" ;;
    q11) echo "--set sources.bids.generator.records=$2" ;;
    esac
}

# Runs query $1 over $check events at its parallelism into $tmp/out.csv
# (CSV: columns are found by their header names).
engine_csv() {
    # shellcheck disable=SC2046
    "$tdm" run "$(job_of "$1")" --quiet $(records_of "$1" "$check") \
        --set sinks.out.type=file --set sinks.out.format=csv \
        --set "sinks.out.path=$tmp/out.csv" 2>/dev/null
}

# ---- Correctness: the engine's result multiset equals the reference's.
check_w() {
    # (auction, window, count) rows, and the counts sum to the bids.
    "$tdm" run "$(job_of w)" --quiet --set "sources.events.generator.records=$check" \
        --set sinks.out.type=file --set "sinks.out.path=$tmp/engine.jsonl" 2>/dev/null
    sed -E 's/.*"auction":([0-9]+),"n":([0-9]+),"window_start":([0-9]+),"window_end":([0-9]+).*/\1 \3 \4 \2/' \
        "$tmp/engine.jsonl" | sort > "$tmp/engine.txt"
    "$ref" "$check" 100000 10000 2>"$tmp/ref.err" | sort > "$tmp/ref.txt"
    bids=$(awk '{print $2}' "$tmp/ref.err")
    sum=$(awk '{s += $4} END {print s}' "$tmp/engine.txt")
    if cmp -s "$tmp/engine.txt" "$tmp/ref.txt" && [ "$sum" = "$bids" ]; then
        echo "check w: $check events, $bids bids, $(wc -l < "$tmp/ref.txt") rows: engine == reference, sum of counts == bids"
    else
        echo "check w: FAILED (engine rows $(wc -l < "$tmp/engine.txt"), reference rows $(wc -l < "$tmp/ref.txt"), sum $sum, bids $bids)"
        return 1
    fi
}

check_q8() {
    # (person, auction, window, name) pairs; their distinct (person,
    # window) are NEXMark's q8 rows.
    engine_csv q8
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
             { print $c["left.id"], $c["right.id"], $c["window_start"],
                     $c["window_end"], $c["left.name"] }' \
        "$tmp/out.csv" | sort > "$tmp/engine.txt"
    "$ref" q8 "$check" 100000 10000 2>"$tmp/ref.err" | sort > "$tmp/ref.txt"
    read -r _ persons _ auctions _ pairs _ rows < "$tmp/ref.err"
    if cmp -s "$tmp/engine.txt" "$tmp/ref.txt"; then
        echo "check q8: $check events, $persons persons, $auctions auctions, $pairs pairs ($rows q8 rows): engine == reference"
    else
        echo "check q8: FAILED (engine pairs $(wc -l < "$tmp/engine.txt"), reference pairs $pairs)"
        return 1
    fi
}

check_q11() {
    # (bidder, session, count) rows, and the counts sum to the bids.
    engine_csv q11
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
             { print $c["bidder"], $c["window_start"], $c["window_end"],
                     $c["n"] }' "$tmp/out.csv" | sort > "$tmp/engine.txt"
    "$ref" q11 "$check" 100000 10000 2>"$tmp/ref.err" | sort > "$tmp/ref.txt"
    bids=$(awk '{print $2}' "$tmp/ref.err")
    sum=$(awk '{s += $4} END {print s}' "$tmp/engine.txt")
    if cmp -s "$tmp/engine.txt" "$tmp/ref.txt" && [ "$sum" = "$bids" ]; then
        echo "check q11: $check events, $bids bids, $(wc -l < "$tmp/ref.txt") sessions: engine == reference, sum of counts == bids"
    else
        echo "check q11: FAILED (engine rows $(wc -l < "$tmp/engine.txt"), reference rows $(wc -l < "$tmp/ref.txt"), sum $sum, bids $bids)"
        return 1
    fi
}

for q in $queries; do
    "check_$q" || exit 1
done

# ---- Throughput ----
printf '%-5s %-6s %4s %9s %9s %16s %8s\n' query config run "wall s" "CPU s" "events/s (wall)" "RSS MB"
for q in $queries; do
    for p in 1 2; do
        i=1
        while [ $i -le "$runs" ]; do
            # shellcheck disable=SC2046
            /usr/bin/time -f "%e %U %S %M" -o "$tmp/t" "$tdm" run "$(job_of "$q")" --quiet 2>/dev/null \
                --parallelism $p $(records_of "$q" "$events") >/dev/null
            read -r wall user sys rss < "$tmp/t"
            awk -v q="$q" -v p="p$p" -v i="$i" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" -v e="$events" \
                'BEGIN { printf "%-5s %-6s %4d %9.2f %9.2f %16.0f %8.0f   (per busy core: %.0f)\n", q, p, i, w, u + s, e / w, r / 1024, e / (u + s) }'
            i=$((i + 1))
        done
    done
done
