#!/bin/sh
# SPDX-License-Identifier: MIT
# run_nexmark.sh - the NEXMark suite (bench/nexmark/*.yaml): NEXMark-W
# (nexmark_w.yaml), the pass-through queries q0, q1 and q2 (q0.yaml,
# q1.yaml, q2.yaml), q5 (q5.yaml, the sliding count) and q5hot (q5 in
# full: q5_hot.yaml, the count chained into a per-window max and a join),
# the V1-rate stress v1 (nexmark_w.yaml at 10,000,000 events per second
# of event time), q7 (q7.yaml), q8 (q8.yaml), q9 (q9.yaml) and q11
# (q11.yaml).  Per query it first checks
# the engine's result multiset against the naive reference
# (bench/nexmark_ref.c) on a smaller run, then runs the full job several
# times at parallelism 1 and 2 and prints events/s by the wall clock,
# events/s per busy core (CPU time) and peak RSS.  Events are those of the
# NEXMark stream (persons, auctions and bids), whatever the job keeps.
# A program, not a test: nothing here is registered with CTest.
#
#   sh bench/run_nexmark.sh [-r RUNS] [-e EVENTS] [-c CHECK_EVENTS]
#                           [-b BUILD_DIR]
#                           [-q "w q0 q1 q2 q5 q5hot v1 q7 q8 q9 q11"]
#
# Defaults: 3 runs, 50,000,000 events, a 10,000,000-event check, build
# folder build-bench (RelWithDebInfo), all eleven queries.  Needs
# /usr/bin/time.  q0-q2's check is tests/cli/nexmark_q012.sh (their
# rows against the reference's bids, at its own sizes).
#
# q5's table rows time the sliding count alone (its sink discards the
# rows), q5hot's the whole query with its hot items.  v1's check runs at the
# stress's own rate, so its 10,000,000 events are 1 s of event time, all
# in one window (about 600,000 live keys; the full run's 50 M events make
# about 3 M).
#
# The columns "p50 lat" and "p99 lat" are the result latency in ms, read
# from the run summary (docs/metrics.md, resultLatencyP50): over every
# on-time window result, the wall time from the watermark that fired it
# leaving its source subtask to the row reaching the sink.  "-" for jobs
# without event-time window results (q0-q2, and the joins q8, q5hot, q7).
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
runs=3
events=50000000
check=10000000
build="$root/build-bench"
queries="w q0 q1 q2 q5 q5hot v1 q7 q8 q9 q11"
while getopts r:e:c:b:q:h opt; do
    case $opt in
    r) runs=$OPTARG ;;
    e) events=$OPTARG ;;
    c) check=$OPTARG ;;
    b) build=$OPTARG ;;
    q) queries=$OPTARG ;;
    *) sed -n '3,33p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    esac
done
[ -x /usr/bin/time ] || { echo "run_nexmark.sh: /usr/bin/time is missing" >&2; exit 1; }
for q in $queries; do
    case $q in
    w | q0 | q1 | q2 | q5 | q5hot | v1 | q7 | q8 | q9 | q11) ;;
    *) echo "run_nexmark.sh: unknown query \"$q\" (w, q0, q1, q2, q5, q5hot, v1, q7, q8, q9, q11)" >&2; exit 2 ;;
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
    w | v1) echo "$root/bench/nexmark/nexmark_w.yaml" ;;
    q5hot) echo "$root/bench/nexmark/q5_hot.yaml" ;;
    *) echo "$root/bench/nexmark/$1.yaml" ;;
    esac
}

# The V1-rate stress: NEXMark-W at this event-time rate (events/s).
v1_rate=10000000

# --set options making query $1 generate $2 events (every source of the
# job reads the same stream), with the query's other settings.
records_of() {
    case $1 in
    w | q5 | q5hot) echo "--set sources.events.generator.records=$2" ;;
    v1) echo "--set sources.events.generator.records=$2 --set sources.events.generator.rate=$v1_rate" ;;
    q8) echo "--set sources.persons.generator.records=$2 --set sources.auctions.generator.records=$2" ;;
    q9) echo "--set sources.auctions.generator.records=$2 --set sources.bids.generator.records=$2" ;;
    q0 | q1 | q2 | q7 | q11) echo "--set sources.bids.generator.records=$2" ;;
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

# json_fields FILE NAME...: the named fields of JSON rows.
. "$root/bench/json_fields.sh"

# ---- Correctness: the engine's result multiset equals the reference's.

# NEXMark-W ($1 = w) or the V1-rate stress ($1 = v1, the same job at
# $v1_rate): (auction, window, count) rows, and the counts sum to the bids.
check_tumbling() {
    rate=100000
    [ "$1" = w ] || rate=$v1_rate
    # shellcheck disable=SC2046
    "$tdm" run "$(job_of "$1")" --quiet $(records_of "$1" "$check") \
        --set sinks.out.type=file --set "sinks.out.path=$tmp/engine.jsonl" 2>/dev/null
    json_fields "$tmp/engine.jsonl" auction window_start window_end n | sort > "$tmp/engine.txt"
    "$ref" w "$check" $rate 10000 2>"$tmp/ref.err" | sort > "$tmp/ref.txt"
    bids=$(awk '{print $2}' "$tmp/ref.err")
    sum=$(awk '{s += $4} END {printf "%.0f", s}' "$tmp/engine.txt")
    if cmp -s "$tmp/engine.txt" "$tmp/ref.txt" && [ "$sum" = "$bids" ]; then
        echo "check $1: $check events at $rate/s, $bids bids, $(wc -l < "$tmp/ref.txt") rows: engine == reference, sum of counts == bids"
    else
        echo "check $1: FAILED (engine rows $(wc -l < "$tmp/engine.txt"), reference rows $(wc -l < "$tmp/ref.txt"), sum $sum, bids $bids)"
        return 1
    fi
}

check_w() {
    check_tumbling w
}

check_v1() {
    check_tumbling v1
}

check_q5() {
    # Stage 1: (auction, sliding window, count) rows; a bid counts in
    # size / slide = 5 windows, so the counts sum to 5 x bids.
    # shellcheck disable=SC2046
    "$tdm" run "$(job_of q5)" --quiet $(records_of q5 "$check") \
        --set sinks.out.type=file --set "sinks.out.path=$tmp/counts.jsonl" 2>/dev/null
    json_fields "$tmp/counts.jsonl" auction window_start window_end n | sort > "$tmp/engine.txt"
    "$ref" q5 "$check" 100000 10000 1 2000 2>"$tmp/ref.err" | sort > "$tmp/ref.txt"
    read -r _ bids _ windows _ rows < "$tmp/ref.err"
    sum=$(awk '{s += $4} END {printf "%.0f", s}' "$tmp/engine.txt")
    if cmp -s "$tmp/engine.txt" "$tmp/ref.txt" && [ "$sum" = $((bids * 5)) ]; then
        echo "check q5: $check events, $bids bids, $rows rows in $windows windows: engine == reference, sum of counts == 5 x bids"
    else
        echo "check q5: FAILED (engine rows $(wc -l < "$tmp/engine.txt"), reference rows $rows, sum $sum, 5 x bids $((bids * 5)))"
        return 1
    fi
}

# q5 in full: the hot items of q5_hot.yaml.
check_q5hot() {
    # shellcheck disable=SC2046
    "$tdm" run "$(job_of q5hot)" --quiet $(records_of q5hot "$check") \
        --set sinks.out.type=file --set "sinks.out.path=$tmp/hot.jsonl" 2>/dev/null
    json_fields "$tmp/hot.jsonl" left.auction left.window_start left.window_end left.n | sort > "$tmp/hot.txt"
    "$ref" q5hot "$check" 100000 10000 1 2000 2>"$tmp/ref.err" | sort > "$tmp/refhot.txt"
    read -r _ bids _ windows _ rows < "$tmp/ref.err"
    if cmp -s "$tmp/hot.txt" "$tmp/refhot.txt"; then
        echo "check q5hot: $check events, $bids bids, $rows hot items in $windows windows: engine == reference"
    else
        echo "check q5hot: FAILED (engine rows $(wc -l < "$tmp/hot.txt"), reference rows $rows)"
        return 1
    fi
}

# q7: the bids having their tumbling window's highest price.
check_q7() {
    # shellcheck disable=SC2046
    "$tdm" run "$(job_of q7)" --quiet $(records_of q7 "$check") \
        --set sinks.out.type=file --set "sinks.out.path=$tmp/q7.jsonl" 2>/dev/null
    json_fields "$tmp/q7.jsonl" left.auction left.price left.bidder left.date_time \
        window_start window_end | sort > "$tmp/engine.txt"
    "$ref" q7 "$check" 100000 10000 2>"$tmp/ref.err" | sort > "$tmp/ref.txt"
    read -r _ bids _ windows _ rows < "$tmp/ref.err"
    if cmp -s "$tmp/engine.txt" "$tmp/ref.txt"; then
        echo "check q7: $check events, $bids bids, $rows highest bids in $windows windows: engine == reference"
    else
        echo "check q7: FAILED (engine rows $(wc -l < "$tmp/engine.txt"), reference rows $rows)"
        return 1
    fi
}

# q9: per auction the highest bid within its lifetime (and how many).
check_q9() {
    # shellcheck disable=SC2046
    "$tdm" run "$(job_of q9)" --quiet $(records_of q9 "$check") \
        --set sinks.out.type=file --set "sinks.out.path=$tmp/q9.jsonl" 2>/dev/null
    json_fields "$tmp/q9.jsonl" left.id left.category price bids \
        window_start window_end | sort > "$tmp/engine.txt"
    "$ref" q9 "$check" 100000 1000 2>"$tmp/ref.err" | sort > "$tmp/ref.txt"
    read -r _ auctions _ bids _ valid _ rows < "$tmp/ref.err"
    if cmp -s "$tmp/engine.txt" "$tmp/ref.txt"; then
        echo "check q9: $check events, $auctions auctions, $valid of $bids bids valid, $rows winning bids: engine == reference"
    else
        echo "check q9: FAILED (engine rows $(wc -l < "$tmp/engine.txt"), reference rows $rows)"
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

# q0, q1, q2: their rows against the reference's bids (one script for
# the three, run once).
q012_checked=0
check_q012() {
    [ $q012_checked = 0 ] || return 0
    q012_checked=1
    if sh "$root/tests/cli/nexmark_q012.sh" "$tdm" "$root" "$ref" >"$tmp/q012.out" 2>&1; then
        echo "check q0 q1 q2: $(tail -1 "$tmp/q012.out")"
    else
        echo "check q0 q1 q2: FAILED"
        cat "$tmp/q012.out"
        return 1
    fi
}
check_q0() { check_q012; }
check_q1() { check_q012; }
check_q2() { check_q012; }

for q in $queries; do
    "check_$q" || exit 1
done

# ---- Throughput ----
printf '%-5s %-6s %4s %9s %9s %16s %8s %8s %8s\n' query config run "wall s" "CPU s" "events/s (wall)" "RSS MB" "p50 lat" "p99 lat"
for q in $queries; do
    for p in 1 2; do
        i=1
        while [ $i -le "$runs" ]; do
            # shellcheck disable=SC2046
            /usr/bin/time -f "%e %U %S %M" -o "$tmp/t" "$tdm" run "$(job_of "$q")" --quiet 2>"$tmp/summary" \
                --parallelism $p $(records_of "$q" "$events") >/dev/null
            read -r wall user sys rss < "$tmp/t"
            # "... p50 0.123 ms, p99 4.567 ms, ..." in the summary.
            lat=$(sed -n 's/.*: p50 \([0-9.]*\) ms, p99 \([0-9.]*\) ms.*/\1 \2/p' "$tmp/summary")
            [ -n "$lat" ] || lat="- -"
            # shellcheck disable=SC2086
            set -- $lat
            awk -v q="$q" -v p="p$p" -v i="$i" -v w="$wall" -v u="$user" -v s="$sys" -v r="$rss" -v e="$events" \
                -v l50="$1" -v l99="$2" \
                'BEGIN { printf "%-5s %-6s %4d %9.2f %9.2f %16.0f %8.0f %8s %8s   (per busy core: %.0f)\n", q, p, i, w, u + s, e / w, r / 1024, l50, l99, e / (u + s) }'
            i=$((i + 1))
        done
    done
done
