#!/bin/sh
# SPDX-License-Identifier: MIT
# chain.sh - chained operators end to end (docs/runtime.md, "Chained
# operators"): a YAML job over a generated file in which
#   counts  (1 s count and sum per key, no sink)   -> peak (10 s per key)
#   maxv    (10 s max over all rows, no sink)      -> top (a window join of
#           the rows with that max, with a filter) -> topcount (60 s per key)
# run by `tidemark run` at parallelism 1, 2 and 4 must write exactly what
# awk computes from the input (the windows by hand: a result row is
# stamped window_end - 1, a window join's pair too).  The input is in
# timestamp order, so nothing is late.  Then the refusals: a cycle, a
# leaf without a sink, an upsert window read by another one, a bad join
# filter.
# Usage: chain.sh TIDEMARK SOURCE_DIR
. "$(dirname "$0")/lib.sh"
setup "$@"
. bench/json_fields.sh

# 6,000 rows: key k0..k4, v in 0..100, ts 1000 + 13 i (to 78,987 ms).
awk 'BEGIN { for (i = 0; i < 6000; i++)
    printf "{\"k\":\"k%d\",\"v\":%d,\"ts\":%d}\n", i % 5, (i * 37) % 101,
        1000 + 13 * i }' >"$T/in.jsonl"

# peak: per key and 10 s window, over the 1 s counts whose rows (stamped
# (sec + 1) * 1000 - 1) fall in it: the largest count, the sum of sums,
# how many seconds had rows.
awk -F'[:,}"]+' '{ k = $3; v = $5; ts = $7; sec = int(ts / 1000)
        n[k " " sec]++; s[k " " sec] += v }
    END { for (ks in n) { split(ks, a, " "); w = int(a[2] / 10)
            key = a[1] " " w
            if (n[ks] > mx[key]) mx[key] = n[ks]
            tot[key] += s[ks]; secs[key]++ }
          for (key in mx) { split(key, a, " ")
            print a[1], mx[key], tot[key], secs[key], a[2] * 10000,
                  a[2] * 10000 + 10000 } }' "$T/in.jsonl" | sort >"$T/peak.want"
# top: the rows whose v is the largest of their 10 s window, with an even
# ts (the join's filter); topcount: those pairs (stamped at their
# window's end - 1) per key and 60 s window.
awk -F'[:,}"]+' '{ k[NR] = $3; v[NR] = $5; t[NR] = $7; w = int($7 / 10000)
        if (!(w in mx) || $5 > mx[w]) mx[w] = $5 }
    END { for (i = 1; i <= NR; i++) { w = int(t[i] / 10000)
            if (v[i] == mx[w] && t[i] % 2 == 0) {
                print k[i], v[i], t[i], w * 10000 > "'"$T"'/top.want"
                c[k[i] " " int((w * 10000 + 9999) / 60000)]++ } }
          for (key in c) { split(key, a, " ")
            print a[1], c[key], a[2] * 60000 } }' "$T/in.jsonl" |
    sort >"$T/topcount.want"
sort -o "$T/top.want" "$T/top.want"
[ "$(wc -l <"$T/top.want")" -gt 10 ] || fail "too few pairs to test"

# The consumers are declared before what they read.
cat >"$T/chain.yaml" <<YAML
name: chain
sources:
  in:
    type: file
    path: $T/in.jsonl
    schema: {k: string, v: int64, ts: timestamp}
    timestamp.field: ts
    watermark: {max_out_of_orderness: 0ms}
windows:
  peak:
    from: counts
    key_by: k
    window: {type: tumbling, size: 10s}
    aggregates:
      - {fn: max, field: n, as: maxn}
      - {fn: sum, field: s, as: total}
      - {fn: count, as: seconds}
    sink: peak_out
  counts:
    from: in
    key_by: k
    window: {type: tumbling, size: 1s}
    aggregates: [{fn: count, as: n}, {fn: sum, field: v, as: s}]
  topcount:
    from: top
    key_by: left.k
    window: {type: tumbling, size: 60s}
    aggregates: [{fn: count, as: n}]
    late_output: late
    sink: topcount_out
  maxv:
    from: in
    window: {type: tumbling, size: 10s}
    aggregates: [{fn: max, field: v, as: maxv}]
joins:
  top:
    type: window
    left: in
    right: maxv
    left_key: v
    right_key: maxv
    window: {type: tumbling, size: 10s}
    filter: "left.ts % 2 = 0"
    sink: top_out
sinks:
  peak_out: {type: file, path: $T/peak.jsonl}
  top_out: {type: file, path: $T/top.jsonl}
  topcount_out: {type: file, path: $T/topcount.jsonl}
  late: {type: file, path: $T/late.jsonl}
YAML

for p in 1 2 4; do
    rm -f "$T"/peak.jsonl "$T"/top.jsonl "$T"/topcount.jsonl "$T"/late.jsonl
    expect_exit "chain at parallelism $p" 0 "$TM" run "$T/chain.yaml" \
        --parallelism $p
    json_fields "$T/peak.jsonl" k maxn total seconds window_start \
        window_end >"$T/peak.got"
    same_multiset "peak at parallelism $p" "$T/peak.want" "$T/peak.got"
    json_fields "$T/top.jsonl" left.k left.v left.ts window_start \
        >"$T/top.got"
    same_multiset "top at parallelism $p" "$T/top.want" "$T/top.got"
    json_fields "$T/topcount.jsonl" left.k n window_start >"$T/tc.got"
    same_multiset "topcount at parallelism $p" "$T/topcount.want" \
        "$T/tc.got"
    [ ! -s "$T/late.jsonl" ] || fail "late rows at parallelism $p"
    # Records in are the file's rows only; rows out are the sinks'.
    rows=$(cat "$T/peak.want" "$T/top.want" "$T/topcount.want" | wc -l)
    [ "$rows" -lt 1000 ] || fail "the summary check assumes no thousands"
    expect_in "summary at parallelism $p" "$T/err" \
        "6,000 records in, $rows rows out"
done

# Refusals, named by node and key.
sed 's/^    from: in$/    from: peak/' "$T/chain.yaml" >"$T/cycle.yaml"
expect_exit "cycle" 3 "$TM" validate "$T/cycle.yaml"
expect_in "cycle" "$T/err" "closes a cycle (peak reads counts, counts reads peak)"
grep -v '^    sink: peak_out$' "$T/chain.yaml" >"$T/nosink.yaml"
expect_exit "leaf without a sink" 3 "$TM" validate "$T/nosink.yaml"
expect_in "leaf without a sink" "$T/err" "windows.peak.sink: required (the name of a sink)"
expect_exit "upsert read by a window" 3 "$TM" validate "$T/chain.yaml" \
    --set windows.counts.output_mode=upsert
expect_in "upsert read by a window" "$T/err" \
    "output_mode: window \"peak\" reads this window, which needs output_mode: append"
expect_exit "bad join filter" 3 "$TM" validate "$T/chain.yaml" \
    --set 'joins.top.filter=left.ts % 2 = right.nope'
expect_in "bad join filter" "$T/err" "right.nope"
echo "chain: peak, top and topcount equal awk's at parallelism 1, 2 and 4; refusals named"
