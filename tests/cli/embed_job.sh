#!/bin/sh
# embed_job.sh - runs examples/embed_job.c (a job built with the C API at
# parallelism 2, with a filter) and checks its output against facts taken
# from the input files by an independent route (grep/awk): no "/cart" row
# survives the filter, and the clicks summed over all windows equal the
# number of non-/cart data lines (no click in these files is late: each
# partition is at most 500 ms out of order).
# Usage: embed_job.sh EXAMPLE_BINARY SOURCE_DIR
set -eu
cd "$2"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$1" >"$out" 2>/dev/null
if grep -q '"/cart"' "$out"; then
    echo "FAIL: a /cart row passed the filter" >&2
    exit 1
fi
want=$(cat examples/data/clicks10s/*.csv | grep -v '^page,' | grep -vc '^/cart,')
got=$(sed 's/.*"clicks":\([0-9]*\).*/\1/' "$out" | awk '{s += $1} END {print s + 0}')
if [ "$want" != "$got" ]; then
    echo "FAIL: clicks summed over windows = $got, want $want" >&2
    exit 1
fi
echo "ok: $got clicks, no /cart rows"
