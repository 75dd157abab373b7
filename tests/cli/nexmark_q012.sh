#!/bin/sh
# SPDX-License-Identifier: MIT
# nexmark_q012.sh - NEXMark q0, q1 and q2 end to end: the pass-through
# jobs bench/nexmark/q0.yaml (every bid), q1.yaml (every bid with
# price_eur = price * 0.908) and q2.yaml (bids whose auction % 123 = 0),
# run by `tidemark run` over generated events at parallelism 1 and 2,
# must write exactly the bids of the naive reference (bench/nexmark_ref.c
# bids), with q1's product and q2's selection computed here by awk, not
# by the engine.  q1's doubles are compared printed with %.17g on both
# sides, so they must agree to the last bit.  q2 runs on 3,000,000 events
# so that some auctions are multiples of 123; the summary must count the
# bids its filter dropped.
# Usage: nexmark_q012.sh TIDEMARK SOURCE_DIR NEXMARK_REF
. "$(dirname "$0")/lib.sh"
ref=$3
setup "$@"

# Field NAME of a JSON line, as awk text ("?" when absent).
FIELD='function field(name,   re) {
    re = "\"" name "\":[-0-9.e+]+"
    if (!match($0, re)) return "?"
    return substr($0, RSTART + length(name) + 3, RLENGTH - length(name) - 3)
}'

# run QUERY EVENTS P: the query's rows into $T/QUERY_P.jsonl.
run() {
    "$TM" run "bench/nexmark/$1.yaml" --quiet --parallelism "$3" \
        --set "sources.bids.generator.records=$2" \
        --set sinks.out.type=file --set "sinks.out.path=$T/$1_$3.jsonl" \
        2>"$T/$1_err.txt" || fail "$1 at parallelism $3: $(cat "$T/$1_err.txt")"
}

events=200000
"$ref" bids $events 2>/dev/null >"$T/bids.txt"
[ "$(wc -l <"$T/bids.txt")" -eq 184000 ] || fail "the reference has not 184,000 bids"
awk '{ printf "%s %s %s %s %.17g\n", $1, $2, $3, $4, $3 * 0.908 }' \
    "$T/bids.txt" >"$T/q1_want.txt"
for p in 1 2; do
    run q0 $events $p
    awk "$FIELD"'{ print field("auction"), field("bidder"), field("price"),
                   field("date_time") }' "$T/q0_$p.jsonl" >"$T/q0_got.txt"
    same_multiset "q0 at parallelism $p" "$T/bids.txt" "$T/q0_got.txt"
    run q1 $events $p
    awk "$FIELD"'{ printf "%s %s %s %s %.17g\n", field("auction"),
                   field("bidder"), field("price"), field("date_time"),
                   field("price_eur") }' "$T/q1_$p.jsonl" >"$T/q1_got.txt"
    same_multiset "q1 at parallelism $p" "$T/q1_want.txt" "$T/q1_got.txt"
done

events=3000000
"$ref" bids $events 2>/dev/null >"$T/bids3.txt"
awk '$1 % 123 == 0 { print $1, $3, $4 }' "$T/bids3.txt" >"$T/q2_want.txt"
[ -s "$T/q2_want.txt" ] || fail "the reference has no auction divisible by 123"
drop=$(( $(wc -l <"$T/bids3.txt") - $(wc -l <"$T/q2_want.txt") ))
# The summary prints thousands with commas.
drop=$(echo "$drop" | sed -e ':a' -e 's/\([0-9]\)\([0-9]\{3\}\)\($\|,\)/\1,\2\3/' -e 'ta')
for p in 1 2; do
    run q2 $events $p
    awk "$FIELD"'{ print field("auction"), field("price"),
                   field("date_time") }' "$T/q2_$p.jsonl" >"$T/q2_got.txt"
    same_multiset "q2 at parallelism $p" "$T/q2_want.txt" "$T/q2_got.txt"
    grep -qF "tidemark: $drop records dropped by source filters." \
        "$T/q2_err.txt" || fail "q2: the summary does not count $drop filtered bids"
done
echo "nexmark_q012: q0, q1, q2 equal the reference's bids at parallelism 1 and 2"
