#!/bin/sh
# SPDX-License-Identifier: MIT
# nexmark_c.sh - examples/nexmark.c, NEXMark-W, q2 and q7 built with the
# C API alone, against the naive reference (bench/nexmark_ref.c): w's
# (auction, window, count) rows equal `nexmark_ref w` over 1,000,000
# events, q2's bids equal the reference's bids whose auction awk finds
# to be a multiple of 123 over 3,000,000 events, and q7's highest bids
# (a window chained into a join) equal `nexmark_ref q7` over 3,000,000
# events (three windows).
# Usage: nexmark_c.sh EXAMPLE_BINARY SOURCE_DIR NEXMARK_REF
. "$(dirname "$0")/lib.sh"
ex=$1 ref=$3
setup "$@"
. bench/json_fields.sh

"$ex" w 1000000 >"$T/w.jsonl" 2>"$T/w.err" || fail "w: $(cat "$T/w.err")"
json_fields "$T/w.jsonl" auction window_start window_end n >"$T/w_got.txt"
"$ref" w 1000000 100000 10000 2>/dev/null >"$T/w_want.txt"
[ -s "$T/w_want.txt" ] || fail "the reference gave no rows"
same_multiset "w" "$T/w_want.txt" "$T/w_got.txt"

"$ex" q2 3000000 >"$T/q2.jsonl" 2>"$T/q2.err" || fail "q2: $(cat "$T/q2.err")"
json_fields "$T/q2.jsonl" auction price date_time >"$T/q2_got.txt"
"$ref" bids 3000000 2>/dev/null | awk '$1 % 123 == 0 { print $1, $3, $4 }' \
    >"$T/q2_want.txt"
[ -s "$T/q2_want.txt" ] || fail "the reference has no auction divisible by 123"
same_multiset "q2" "$T/q2_want.txt" "$T/q2_got.txt"

"$ex" q7 3000000 >"$T/q7.jsonl" 2>"$T/q7.err" || fail "q7: $(cat "$T/q7.err")"
json_fields "$T/q7.jsonl" left.auction left.price left.bidder left.date_time \
    window_start window_end >"$T/q7_got.txt"
"$ref" q7 3000000 100000 10000 2>/dev/null >"$T/q7_want.txt"
[ "$(wc -l <"$T/q7_want.txt")" -ge 3 ] || fail "the reference has fewer than 3 q7 rows"
same_multiset "q7" "$T/q7_want.txt" "$T/q7_got.txt"
echo "nexmark_c: w, q2 and q7 from the C API equal the reference"
