#!/bin/sh
# expr.sh - a source's filter and compute keys end to end
# (docs/job-format.md, Expressions): tests/cli/jobs/expr.yaml over
# tests/cli/data/expr.jsonl must write exactly the rows that awk derives
# from the data here, by the SQL rules written out by hand below (not by
# the engine), at parallelism 1 and 2; and a broken expression in a job
# file must be reported at its file:line:col with the key path and the
# column inside the expression.
# (NEXMark q1 and q2, which use these keys on generated bids, are
# checked against the reference by nexmark_q012.sh.)
# Usage: expr.sh TIDEMARK SOURCE_DIR
. "$(dirname "$0")/lib.sh"
setup "$@"

# The expected rows "id qty total per n", one per kept record:
#   filter: item is not "skip" nor "it's", price present, qty >= 0 or
#           missing (null OR true is true; a missing item or a negative
#           qty drops the record);
#   total = qty * price * 0.908 (double; null when qty is missing);
#   per   = 1000 / (qty - 4), truncated toward zero (null when qty is
#           missing or 4);
#   qty   = qty * 2 (computed last, so total and per saw the original).
# Doubles are printed with %.17g on both sides, so they must be equal to
# the last bit.
awk '
function field(name,   re, v) {
    re = "\"" name "\":(\"[^\"]*\"|[-0-9.e+]+)"
    if (!match($0, re)) return "";
    v = substr($0, RSTART + length(name) + 3, RLENGTH - length(name) - 3)
    gsub(/"/, "", v)
    return v
}
{
    id = field("id"); item = field("item"); qty = field("qty")
    price = field("price")
    if (item == "skip" || item == "it'"'"'s" || price == "") next
    if (qty != "" && qty + 0 < 0) next
    if (qty == "") { print id, "null", "null", "null", 1; next }
    total = sprintf("%.17g", (qty * price) * 0.908)
    per = qty == 4 ? "null" : int(1000 / (qty - 4))
    print id, qty * 2, total, per, 1
}' tests/cli/data/expr.jsonl >"$T/want.txt"
[ "$(wc -l <"$T/want.txt")" -eq 9 ] || fail "awk kept $(wc -l <"$T/want.txt") rows, the data has 9 to keep"

for p in 1 2; do
    "$TM" run tests/cli/jobs/expr.yaml --quiet --parallelism $p \
        --set "sinks.out.path=$T/out$p.jsonl" 2>"$T/err$p.txt" ||
        fail "parallelism $p: run failed: $(cat "$T/err$p.txt")"
    awk '
    function field(name,   re, v) {
        re = "\"" name "\":(\"[^\"]*\"|[-0-9.e+]+|null)"
        if (!match($0, re)) return "?";
        v = substr($0, RSTART + length(name) + 3, RLENGTH - length(name) - 3)
        gsub(/"/, "", v)
        return v
    }
    {
        t = field("total")
        if (t != "null") t = sprintf("%.17g", t)
        print field("id"), field("qty"), t, field("per"), field("n")
    }' "$T/out$p.jsonl" >"$T/got$p.txt"
    same_multiset "parallelism $p" "$T/want.txt" "$T/got$p.txt"
    # The summary counts what the filter dropped: every line awk did
    # not keep.
    drop=$(( $(wc -l <tests/cli/data/expr.jsonl) - 9 ))
    grep -qF "tidemark: $drop records dropped by source filters." "$T/err$p.txt" ||
        fail "parallelism $p: no \"$drop records dropped\" in the summary"
done

# A broken expression: file:line:col of the value, the key path, the
# column inside the expression and what was expected.
sed 's/per: "1000 \/ (qty - 4)"/per: "1000 \/ (qty - )"/' \
    tests/cli/jobs/expr.yaml >"$T/bad.yaml"
line=$(grep -n 'per: "1000' "$T/bad.yaml" | cut -d: -f1)
col=$(sed -n "${line}p" "$T/bad.yaml" | awk '{ print index($0, "\"1000") }')
if "$TM" validate "$T/bad.yaml" 2>"$T/bad.txt"; then
    fail "a broken compute expression validated"
fi
want="$T/bad.yaml:$line:$col: sources.orders.compute.per: column 15: expected an operand, got \")\""
grep -qxF "$want" "$T/bad.txt" || fail "expected \"$want\", got: $(cat "$T/bad.txt")"
sed 's/filter: "item <>/filter: "itme <>/' tests/cli/jobs/expr.yaml >"$T/bad2.yaml"
if "$TM" validate "$T/bad2.yaml" 2>"$T/bad2.txt"; then
    fail "a filter on an unknown field validated"
fi
grep -qF 'sources.orders.filter: column 1: unknown field "itme" (did you mean "item"?)' "$T/bad2.txt" ||
    fail "unknown field: got $(cat "$T/bad2.txt")"

# String and bool computes: each kept record passes through to the sink
# with its label (UPPER of the item, a CONCAT with the id) and whether
# it is a pen, copied into the batch (a string field's text lives in the
# batch: tidemark never points a row at the expression's scratch).
cat >"$T/strs.yaml" <<YAMLEOF
name: strs
sources:
  orders:
    type: file
    path: tests/cli/data/expr.jsonl
    format: json
    schema: {id: string, item: string, ts: int64, label: string, pen: bool}
    timestamp: {field: ts, unit: ms}
    filter: "ts <= 3000"
    compute:
      label: "CONCAT(id, ':', UPPER(item))"
      pen: "item = 'pen'"
      item: "LOWER(label)"
    sink: out
sinks:
  out: {type: file, path: $T/strs.jsonl, select: "id, item, label, pen"}
YAMLEOF
printf '%s\n' '{"id":"r01","item":"r01:pen","label":"r01:PEN","pen":true}' \
    '{"id":"r02","item":"r02:ink","label":"r02:INK","pen":false}' \
    '{"id":"r03","item":"r03:skip","label":"r03:SKIP","pen":false}' \
    >"$T/strs.want"
for p in 1 2; do
    rm -f "$T/strs.jsonl"
    "$TM" run "$T/strs.yaml" --quiet --parallelism $p 2>"$T/strs.err" ||
        fail "string computes at parallelism $p: $(cat "$T/strs.err")"
    same_multiset "string computes at parallelism $p" "$T/strs.want" \
        "$T/strs.jsonl"
done
sed 's/pen: "item = .pen."/pen: "UPPER(item)"/' "$T/strs.yaml" >"$T/strs_bad.yaml"
if "$TM" validate "$T/strs_bad.yaml" 2>"$T/strs_bad.txt"; then
    fail "a string expression computed into a bool field validated"
fi
grep -qF 'sources.orders.compute.pen: the expression is string, expected a bool for field "pen"' \
    "$T/strs_bad.txt" || fail "string into bool: $(cat "$T/strs_bad.txt")"

echo "expr: filter and compute rows equal to awk's at parallelism 1 and 2; errors placed"
