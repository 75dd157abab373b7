#!/bin/sh
# SPDX-License-Identifier: MIT
# nexmark_q7.sh - NEXMark q7 end to end: bench/nexmark/q7.yaml (a global
# tumbling MAX(price) window chained into a window join of the bids on
# price = max) run by `tidemark run` over 1,000,000 generated events at
# parallelism 1, 2 and 4 must write exactly the bids of the naive
# reference (bench/nexmark_ref.c q7: two passes, the largest price per
# window, then every bid having it), compared as sorted lines of
# (auction, price, bidder, date_time, window_start, window_end).  The
# join's right side carries the max row's own window, which must be the
# bid's.  Two event-time rates: the job's 100,000/s (one window) and
# 5,000/s (20 windows).  Run again with local aggregation off (every bid
# goes to the max window's one subtask): the same rows.  No bid is late:
# every partition's times never decrease and the watermark trails them
# by 4 s.
# Usage: nexmark_q7.sh TIDEMARK SOURCE_DIR NEXMARK_REF
set -eu
tdm=$1 src=$2 ref=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export LC_ALL=C
events=1000000
. "$src/bench/json_fields.sh"
for rate in 100000 5000; do
    "$ref" q7 $events $rate 10000 2>"$tmp/ref.err" | sort > "$tmp/ref.txt"
    read -r _ bids _ windows _ rows < "$tmp/ref.err"
    [ "$bids" = 920000 ] || { echo "reference: $bids bids, expected 920000"; exit 1; }
    [ "$rows" -ge "$windows" ] || { echo "reference: $rows rows for $windows windows"; exit 1; }
    for run in "1 auto" "2 auto" "4 auto" "2 off"; do
        set -- $run
        "$tdm" run "$src/bench/nexmark/q7.yaml" --quiet --parallelism $1 \
            --set sources.bids.generator.records=$events \
            --set sources.bids.generator.rate=$rate \
            --set windows.maxprice.local_aggregation=$2 \
            --set sinks.out.type=file \
            --set "sinks.out.path=$tmp/out.jsonl" 2>"$tmp/err" ||
            { echo "rate $rate, parallelism $1, local $2: run failed:"; cat "$tmp/err"; exit 1; }
        json_fields "$tmp/out.jsonl" left.auction left.price left.bidder \
            left.date_time window_start window_end right.maxprice \
            right.window_start right.window_end |
            awk '$2 != $7 || $5 != $8 || $6 != $9 { print "bad pair: " $0; exit 1 }
                 { print $1, $2, $3, $4, $5, $6 }' | sort > "$tmp/eng.txt"
        if ! cmp -s "$tmp/eng.txt" "$tmp/ref.txt"; then
            echo "rate $rate, parallelism $1, local $2: rows differ from the reference:"
            diff "$tmp/eng.txt" "$tmp/ref.txt" | head -10
            exit 1
        fi
    done
    echo "nexmark_q7: rate $rate: $rows highest bids in $windows windows equal to the reference at parallelism 1, 2, 4 (and 2 one-phase)"
done
