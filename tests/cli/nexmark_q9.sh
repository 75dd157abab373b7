#!/bin/sh
# SPDX-License-Identifier: MIT
# nexmark_q9.sh - NEXMark q9 end to end: bench/nexmark/q9.yaml (an
# interval join of auctions and bids with a filter on the auction's
# expiry, chained into a session window per auction) run by `tidemark
# run` over 1,000,000 generated events at parallelism 1 and 2 must write
# exactly the rows of the naive reference (bench/nexmark_ref.c q9: each
# bid looked up in the auction table and kept when its time lies in
# [date_time, expires]), compared as sorted lines of (auction, category,
# winning price, valid bids, session start, session end).  Two event-time
# rates: the job's 100,000/s (auctions live up to 34 ms) and 5,000/s (up
# to 667 ms, still below the job's 1 s bound and gap).  No record is
# late: every partition's times never decrease and the watermark trails
# them by 4 s.
# Usage: nexmark_q9.sh TIDEMARK SOURCE_DIR NEXMARK_REF
set -eu
tdm=$1 src=$2 ref=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export LC_ALL=C
events=1000000
. "$src/bench/json_fields.sh"
for rate in 100000 5000; do
    "$ref" q9 $events $rate 1000 2>"$tmp/ref.err" | sort > "$tmp/ref.txt"
    read -r _ auctions _ bids _ valid _ rows < "$tmp/ref.err"
    [ "$auctions $bids" = "60000 920000" ] ||
        { echo "reference: $auctions auctions, $bids bids, expected 60000 920000"; exit 1; }
    [ "$valid" -gt 0 ] && [ "$valid" -lt "$bids" ] ||
        { echo "reference: $valid valid bids of $bids: the filter is not exercised"; exit 1; }
    for p in 1 2; do
        "$tdm" run "$src/bench/nexmark/q9.yaml" --quiet --parallelism $p \
            --set sources.auctions.generator.records=$events \
            --set sources.bids.generator.records=$events \
            --set sources.auctions.generator.rate=$rate \
            --set sources.bids.generator.rate=$rate \
            --set sinks.out.type=file \
            --set "sinks.out.path=$tmp/out.jsonl" 2>"$tmp/err" ||
            { echo "rate $rate, parallelism $p: run failed:"; cat "$tmp/err"; exit 1; }
        json_fields "$tmp/out.jsonl" left.id left.category price bids \
            window_start window_end | sort > "$tmp/eng.txt"
        if ! cmp -s "$tmp/eng.txt" "$tmp/ref.txt"; then
            echo "rate $rate, parallelism $p: rows differ from the reference:"
            diff "$tmp/eng.txt" "$tmp/ref.txt" | head -10
            exit 1
        fi
        n=$(awk '{ s += $4 } END { print s + 0 }' "$tmp/eng.txt")
        [ "$n" -eq "$valid" ] || { echo "rate $rate, parallelism $p: $n valid bids counted, reference $valid"; exit 1; }
    done
    echo "nexmark_q9: rate $rate: $rows winning bids ($valid valid of $bids bids) equal to the reference at parallelism 1 and 2"
done
