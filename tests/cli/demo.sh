#!/bin/sh
# demo.sh - runs the README demo on its bundled data and compares the output
# with tests/cli/demo.expected, whose lines were checked by hand against the
# comments in examples/data/clicks.csv (watermark = max - 2000 - 1 at each
# 200 ms tick, [0,10000) on time at 10499's predecessor 8999+..., etc.).
# Usage: demo.sh DEMO_BINARY SOURCE_DIR
set -eu
out=$(mktemp)
trap 'rm -f "$out"' EXIT
cd "$2"
"$1" examples/data/clicks.csv >"$out" 2>/dev/null
diff -u tests/cli/demo.expected "$out"
