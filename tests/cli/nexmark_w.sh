#!/bin/sh
# SPDX-License-Identifier: MIT
# nexmark_w.sh - NEXMark-W end to end: bench/nexmark/nexmark_w.yaml run by
# `tidemark run` over 1,000,000 generated events (at parallelism 1 and 2)
# must produce exactly the (auction, window, count) multiset of the naive
# reference (bench/nexmark_ref.c), and its counts must sum to the bids.
# With an out-of-order group of 1 and a 4 s bound no bid is late, so every
# bid must be counted.
# Usage: nexmark_w.sh TIDEMARK SOURCE_DIR NEXMARK_REF
set -eu
tdm=$1 src=$2 ref=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
events=1000000
"$ref" $events 100000 10000 2>"$tmp/ref.err" | sort > "$tmp/ref.txt"
bids=$(awk '{print $2}' "$tmp/ref.err")
[ "$bids" = 920000 ] || { echo "reference: $bids bids, expected 920000 (46 in 50)"; exit 1; }
for p in 1 2; do
    "$tdm" run "$src/bench/nexmark/nexmark_w.yaml" --quiet --parallelism $p \
        --set sources.events.generator.records=$events \
        --set sinks.out.type=file --set "sinks.out.path=$tmp/out$p.jsonl" 2>/dev/null
    sed -E 's/.*"auction":([0-9]+),"n":([0-9]+),"window_start":([0-9]+),"window_end":([0-9]+).*/\1 \3 \4 \2/' \
        "$tmp/out$p.jsonl" | sort > "$tmp/eng$p.txt"
    if ! cmp -s "$tmp/eng$p.txt" "$tmp/ref.txt"; then
        echo "parallelism $p: result differs from the reference:"
        diff "$tmp/eng$p.txt" "$tmp/ref.txt" | head -10
        exit 1
    fi
    sum=$(awk '{s += $4} END {print s}' "$tmp/eng$p.txt")
    [ "$sum" = "$bids" ] || { echo "parallelism $p: counts sum to $sum, not $bids"; exit 1; }
done
echo "nexmark_w: $(wc -l < "$tmp/ref.txt") rows equal to the reference at parallelism 1 and 2"
