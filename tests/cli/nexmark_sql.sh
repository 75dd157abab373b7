#!/bin/sh
# SPDX-License-Identifier: MIT
# nexmark_sql.sh - the NEXMark queries of nexmark-flink in SQL
# (bench/nexmark/sql: ddl.sql, then q0, q1, q2, q7, q8, q11 as
# published) run by `tidemark sql` over generated events at parallelism
# 1 and 2, with the blackhole sinks turned into files by --set, must give
# the result multisets of the naive reference (bench/nexmark_ref.c):
#   q0, q1, q2  every bid (q1's euro price a DECIMAL(18, 3), exactly
#               price * 908 / 1000 with three decimals, and q2's selection computed here by awk from
#               `nexmark_ref bids`, not by the engine);
#   q7          the bids B whose price is the maximum of a 10 s window
#               whose end lies in [B.dateTime, B.dateTime + 10 s] (the
#               published query's condition, evaluated here by awk from
#               the bids: a bid on a window boundary meets two windows);
#   q8          the distinct (person, name, window start) of
#               `nexmark_ref q8`'s pairs;
#   q11         `nexmark_ref q11`'s sessions.
# q7 and q8 also run at 10,000 events/s (several windows).  No record is
# late: the generator's times trail the watermark by 4 s at most.
# Usage: nexmark_sql.sh TIDEMARK SOURCE_DIR NEXMARK_REF
set -eu
tdm=$1 src=$2 ref=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export LC_ALL=C
cd "$src"
. bench/json_fields.sh
Q=bench/nexmark/sql

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# ddl EVENTS RATE: the DDL with those numbers.
ddl() {
    sed -e "s/'events.num' = '[0-9]*'/'events.num' = '$1'/" \
        -e "s/'first-event.rate' = '[0-9]*'/'first-event.rate' = '$2'/" \
        "$Q/ddl.sql" >"$tmp/ddl.sql"
}

# run QUERY P: the query's rows into $tmp/QUERY.jsonl.
run() {
    rm -f "$tmp/$1.jsonl"
    "$tdm" sql -i "$tmp/ddl.sql" "$Q/$1.sql" --quiet -p "$2" \
        --set "sinks.nexmark_$1.type=file" \
        --set "sinks.nexmark_$1.path=$tmp/$1.jsonl" 2>"$tmp/err" ||
        fail "$1 at parallelism $2: $(cat "$tmp/err")"
}

# same WHAT WANT GOT: equal as sorted multisets.
same() {
    sort "$2" >"$tmp/want.s"
    sort "$3" >"$tmp/got.s"
    if ! cmp -s "$tmp/want.s" "$tmp/got.s"; then
        diff "$tmp/want.s" "$tmp/got.s" | head -10 >&2
        fail "$1: rows differ from the reference"
    fi
}

events=200000
ddl $events 100000
"$ref" bids $events 2>/dev/null >"$tmp/bids.txt"
awk '{ v = $3 * 908; printf "%s %s %s %d.%03d\n", $1, $2, $4, int(v / 1000), v % 1000 }' \
    "$tmp/bids.txt" >"$tmp/q1_want.txt"
awk '$1 % 123 == 0 { print $1, $3 }' "$tmp/bids.txt" >"$tmp/q2_want.txt"
[ -s "$tmp/q2_want.txt" ] || fail "the reference has no auction divisible by 123"
for p in 1 2; do
    run q0 $p
    json_fields "$tmp/q0.jsonl" auction bidder price dateTime >"$tmp/got.txt"
    same "q0 at parallelism $p" "$tmp/bids.txt" "$tmp/got.txt"
    grep -q '"extra":null' "$tmp/q0.jsonl" || fail "q0: extra is not null"
    run q1 $p
    json_fields "$tmp/q1.jsonl" auction bidder dateTime price >"$tmp/got.txt"
    same "q1 at parallelism $p" "$tmp/q1_want.txt" "$tmp/got.txt"
    run q2 $p
    json_fields "$tmp/q2.jsonl" auction price >"$tmp/got.txt"
    same "q2 at parallelism $p" "$tmp/q2_want.txt" "$tmp/got.txt"
done

events=1000000
for rate in 100000 10000; do
    ddl $events $rate
    "$ref" bids $events $rate 2>/dev/null >"$tmp/bids.txt"
    # q7 by its SQL text: windows [w, w + 10000); a bid at t meets the
    # windows whose end e has t <= e <= t + 10000.
    # (Keys are printed with %.0f: awk may write large numbers as 1e+12.)
    awk '{ w = sprintf("%.0f", $4 - $4 % 10000)
           if (!(w in max) || $3 + 0 > max[w] + 0) max[w] = $3
           bid[NR] = $0 }
         END { for (i = 1; i <= NR; i++) {
                 split(bid[i], f, " ")
                 for (e = f[4] - f[4] % 10000; e <= f[4] + 10000; e += 10000) {
                     k = sprintf("%.0f", e - 10000)
                     if (e >= f[4] && (k in max) && max[k] + 0 == f[3] + 0)
                         print f[1], f[2], f[3], f[4] } } }' \
        "$tmp/bids.txt" >"$tmp/q7_want.txt"
    "$ref" q8 $events $rate 10000 2>/dev/null |
        awk '{ n = $5; for (i = 6; i <= NF; i++) n = n " " $i
               print $1, n, $3 }' | sort -u >"$tmp/q8_want.txt"
    "$ref" q11 $events $rate 10000 2>/dev/null |
        awk '{ print $1, $4, $2, $3 }' >"$tmp/q11_want.txt"
    for p in 1 2; do
        run q7 $p
        json_fields "$tmp/q7.jsonl" auction bidder price dateTime >"$tmp/got.txt"
        same "q7 at rate $rate, parallelism $p" "$tmp/q7_want.txt" "$tmp/got.txt"
        run q8 $p
        json_fields "$tmp/q8.jsonl" id name stime >"$tmp/got.txt"
        same "q8 at rate $rate, parallelism $p" "$tmp/q8_want.txt" "$tmp/got.txt"
        run q11 $p
        json_fields "$tmp/q11.jsonl" bidder bid_count starttime endtime >"$tmp/got.txt"
        same "q11 at rate $rate, parallelism $p" "$tmp/q11_want.txt" "$tmp/got.txt"
    done
    echo "nexmark_sql: rate $rate: q7 $(wc -l <"$tmp/q7_want.txt"), q8 $(wc -l <"$tmp/q8_want.txt"), q11 $(wc -l <"$tmp/q11_want.txt") rows equal to the reference at parallelism 1 and 2"
done
echo "nexmark_sql: q0, q1, q2 equal to the reference at parallelism 1 and 2"
