#!/bin/sh
# SPDX-License-Identifier: MIT
# nexmark_q5.sh - NEXMark q5 end to end.  Stage 1, bench/nexmark/q5.yaml
# (bids per auction in sliding windows of 10 s every 2 s) run by
# `tidemark run` over 1,000,000 generated events at parallelism 1 and 2,
# must produce exactly the (auction, window_start, window_end, count)
# multiset of the naive reference (bench/nexmark_ref.c q5, which adds
# each bid to every window containing it), and each window's counts must
# add up to the bids of the window's five 2 s slices, taken from a
# separate computation (the reference's tumbling 2 s count, `w` with size
# 2000): a bid counts in exactly size / slide = 5 windows, the windows
# starting up to 8 s before the first bid's slice and ending after the
# last bid included, so the windows are those within 8 s before a
# non-empty slice and all counts add up to 5 x bids.  The hot items,
# bench/nexmark/q5_hot.yaml (the count chained into a per-window max and
# a join on count = max, one job), at parallelism 1 and 2 must equal
# `nexmark_ref q5hot`.  Two event-time rates: the job's 100,000/s (9
# windows, three different hot auctions) and 5,000/s (104 windows, five
# of them with two hot auctions).
# No bid is late: every partition's times never decrease and the
# watermark trails them by 4 s.
# Usage: nexmark_q5.sh TIDEMARK SOURCE_DIR NEXMARK_REF
set -eu
tdm=$1 src=$2 ref=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export LC_ALL=C
events=1000000
jobs=$src/bench/nexmark

# json_fields FILE NAME...: the named fields of JSON rows.
. "$src/bench/json_fields.sh"

for rate in 100000 5000; do
    "$ref" q5 $events $rate 10000 1 2000 2>"$tmp/ref.err" | sort > "$tmp/ref.txt"
    "$ref" q5hot $events $rate 10000 1 2000 2>/dev/null | sort > "$tmp/refhot.txt"
    bids=$(awk '{print $2}' "$tmp/ref.err")
    # 46 bids in every block of 50 events.
    [ "$bids" = 920000 ] || { echo "reference: $bids bids, expected 920000"; exit 1; }
    # Per window start: the bids of the slices [s + 2k s, s + 2k s + 2 s),
    # k = 0..4, from the tumbling 2 s count.
    "$ref" w $events $rate 2000 2>/dev/null |
        awk '{ slice[$2] += $4 }
             END { for (s in slice) for (k = 0; k < 5; k++) win[sprintf("%.0f", s - 2000 * k)] += slice[s]
                   for (w in win) printf "%s %.0f\n", w, win[w] }' | sort > "$tmp/win_expected.txt"
    for p in 1 2; do
        "$tdm" run "$jobs/q5.yaml" --quiet --parallelism $p \
            --set sources.events.generator.records=$events \
            --set sources.events.generator.rate=$rate \
            --set sinks.out.type=file --set "sinks.out.path=$tmp/counts$p.jsonl" 2>/dev/null
        json_fields "$tmp/counts$p.jsonl" auction window_start window_end n | sort > "$tmp/eng.txt"
        if ! cmp -s "$tmp/eng.txt" "$tmp/ref.txt"; then
            echo "rate $rate, parallelism $p: counts differ from the reference:"
            diff "$tmp/eng.txt" "$tmp/ref.txt" | head -10
            exit 1
        fi
        awk '{ sum[$2] += $4; if ($3 != $2 + 10000) bad = 1 }
             END { for (w in sum) printf "%s %.0f\n", w, sum[w]; exit bad }' \
            "$tmp/eng.txt" > "$tmp/win_sums.txt" ||
            { echo "rate $rate, parallelism $p: a window is not 10 s long"; exit 1; }
        sort "$tmp/win_sums.txt" > "$tmp/win_engine.txt"
        if ! cmp -s "$tmp/win_engine.txt" "$tmp/win_expected.txt"; then
            echo "rate $rate, parallelism $p: per-window sums (window_start sum) differ from the 2 s slices':"
            diff "$tmp/win_engine.txt" "$tmp/win_expected.txt" | head -10
            exit 1
        fi
        sum=$(awk '{s += $4} END {printf "%.0f", s}' "$tmp/eng.txt")
        [ "$sum" = $((bids * 5)) ] ||
            { echo "rate $rate, parallelism $p: counts sum to $sum, not 5 x $bids"; exit 1; }
    done
    # The hot items: bench/nexmark/q5_hot.yaml chains the count into a
    # per-window max and a join, in one job, at parallelism 1 and 2.
    for p in 1 2; do
        "$tdm" run "$jobs/q5_hot.yaml" --quiet --parallelism $p \
            --set sources.events.generator.records=$events \
            --set sources.events.generator.rate=$rate \
            --set sinks.out.type=file --set "sinks.out.path=$tmp/hot.jsonl" 2>"$tmp/hot.err"
        json_fields "$tmp/hot.jsonl" left.auction left.window_start \
            left.window_end left.n | sort > "$tmp/hot.txt"
        if ! cmp -s "$tmp/hot.txt" "$tmp/refhot.txt"; then
            echo "rate $rate, parallelism $p: hot items differ from the reference:"
            diff "$tmp/hot.txt" "$tmp/refhot.txt" | head -10
            cat "$tmp/hot.err"
            exit 1
        fi
    done
    windows=$(wc -l < "$tmp/win_expected.txt")
    ties=$(cut -d' ' -f2 "$tmp/refhot.txt" | sort | uniq -d | wc -l)
    # At 5,000/s some window must have two hot auctions, or the tie was
    # not exercised.
    if [ $rate = 5000 ] && [ "$ties" = 0 ]; then
        echo "rate $rate: no window has two hot auctions"
        exit 1
    fi
    echo "nexmark_q5: rate $rate: $(wc -l < "$tmp/ref.txt") counts in $windows windows equal to the reference at parallelism 1 and 2, $(wc -l < "$tmp/refhot.txt") hot items ($ties windows tied) equal to q5hot at parallelism 1 and 2"
done
