#!/bin/sh
# SPDX-License-Identifier: MIT
# nexmark_q8.sh - NEXMark q8 end to end: bench/nexmark/q8.yaml (persons x
# auctions on id = seller in the same tumbling 10 s window) run by
# `tidemark run` over 1,000,000 generated events at parallelism 1 and 2
# must produce exactly the (person, auction, window, name) pairs of the
# naive reference (bench/nexmark_ref.c q8), compared as sorted lines.
# Two event-time rates: the job's 100,000/s (the run is one window) and
# 10,000/s (ten windows, so auctions whose seller was created in the
# previous window must find no partner).  No record is late: every
# partition's times never decrease and the watermark trails them by 4 s.
# Usage: nexmark_q8.sh TIDEMARK SOURCE_DIR NEXMARK_REF
set -eu
tdm=$1 src=$2 ref=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export LC_ALL=C
events=1000000
for rate in 100000 10000; do
    "$ref" q8 $events $rate 10000 2>"$tmp/ref.err" | sort > "$tmp/ref.txt"
    # 1,000,000 events are 20,000 blocks of 50: 1 person and 3 auctions
    # each.
    read -r _ persons _ auctions _ pairs _ rows < "$tmp/ref.err"
    [ "$persons $auctions" = "20000 60000" ] ||
        { echo "reference: $persons persons, $auctions auctions, expected 20000 60000"; exit 1; }
    [ "$pairs" -gt 0 ] || { echo "reference: no pair at rate $rate"; exit 1; }
    for p in 1 2; do
        "$tdm" run "$src/bench/nexmark/q8.yaml" --quiet --parallelism $p \
            --set sources.persons.generator.records=$events \
            --set sources.auctions.generator.records=$events \
            --set sources.persons.generator.rate=$rate \
            --set sources.auctions.generator.rate=$rate \
            --set sinks.out.type=file --set sinks.out.format=csv \
            --set "sinks.out.path=$tmp/out.csv" 2>/dev/null
        # Columns by their header names (names hold no comma).
        awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
                 { print $c["left.id"], $c["right.id"], $c["window_start"],
                         $c["window_end"], $c["left.name"] }' \
            "$tmp/out.csv" | sort > "$tmp/eng.txt"
        if ! cmp -s "$tmp/eng.txt" "$tmp/ref.txt"; then
            echo "rate $rate, parallelism $p: pairs differ from the reference:"
            diff "$tmp/eng.txt" "$tmp/ref.txt" | head -10
            exit 1
        fi
    done
    # NEXMark's q8 rows: the distinct (person, window) of the pairs.
    n=$(cut -d' ' -f1,3 "$tmp/eng.txt" | sort -u | wc -l)
    [ "$n" -eq "$rows" ] || { echo "rate $rate: $n distinct rows, reference $rows"; exit 1; }
    echo "nexmark_q8: rate $rate: $pairs pairs ($rows q8 rows) equal to the reference at parallelism 1 and 2"
done
