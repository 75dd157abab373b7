#!/bin/sh
# SPDX-License-Identifier: MIT
# nexmark_q11.sh - NEXMark q11 end to end: bench/nexmark/q11.yaml (bids
# per bidder per session, gap 10 s) run by `tidemark run` over 1,000,000
# generated events at parallelism 1 and 2 must produce exactly the
# (bidder, session_start, session_end, count) multiset of the naive
# reference (bench/nexmark_ref.c q11), and the counts must sum to the
# bids.  Two event-time rates: the job's 100,000/s (a bidder's bids all
# fall within half a second, one session each) and 1,000/s (bids of one
# bidder drift apart, so sessions split, and a few consecutive bids lie
# exactly 10 s apart: touching sessions merge).  No bid is late: every
# partition's times never decrease and the watermark trails them by 4 s.
# Usage: nexmark_q11.sh TIDEMARK SOURCE_DIR NEXMARK_REF
set -eu
tdm=$1 src=$2 ref=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export LC_ALL=C
events=1000000
for rate in 100000 1000; do
    "$ref" q11 $events $rate 10000 2>"$tmp/ref.err" | sort > "$tmp/ref.txt"
    bids=$(awk '{print $2}' "$tmp/ref.err")
    # 46 bids in every block of 50 events.
    [ "$bids" = 920000 ] || { echo "reference: $bids bids, expected 920000"; exit 1; }
    for p in 1 2; do
        "$tdm" run "$src/bench/nexmark/q11.yaml" --quiet --parallelism $p \
            --set sources.bids.generator.records=$events \
            --set sources.bids.generator.rate=$rate \
            --set sinks.out.type=file --set sinks.out.format=csv \
            --set "sinks.out.path=$tmp/out.csv" 2>/dev/null
        awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
                 { print $c["bidder"], $c["window_start"], $c["window_end"],
                         $c["n"] }' "$tmp/out.csv" | sort > "$tmp/eng.txt"
        if ! cmp -s "$tmp/eng.txt" "$tmp/ref.txt"; then
            echo "rate $rate, parallelism $p: result differs from the reference:"
            diff "$tmp/eng.txt" "$tmp/ref.txt" | head -10
            exit 1
        fi
        sum=$(awk '{s += $4} END {print s}' "$tmp/eng.txt")
        [ "$sum" = "$bids" ] || { echo "rate $rate, parallelism $p: counts sum to $sum, not $bids"; exit 1; }
    done
    sessions=$(wc -l < "$tmp/ref.txt")
    bidders=$(cut -d' ' -f1 "$tmp/ref.txt" | sort -u | wc -l)
    # At 1,000/s some bidder must have several sessions, or the split
    # was not exercised.
    if [ $rate = 1000 ] && [ "$sessions" -le "$bidders" ]; then
        echo "rate $rate: $sessions sessions for $bidders bidders: no bidder has two"
        exit 1
    fi
    echo "nexmark_q11: rate $rate: $sessions sessions of $bidders bidders equal to the reference at parallelism 1 and 2"
done
