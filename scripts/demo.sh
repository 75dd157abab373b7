#!/bin/sh
# demo.sh - builds tidemark and runs the demo job on bundled data: click
# counts per user in 10 s tumbling windows with 2 s out-of-orderness, 5 s
# allowed lateness and a late side output.
set -eu
cd "$(dirname "$0")/.."
sh scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j2 --target example_demo >/dev/null
exec ./build/example_demo examples/data/clicks.csv
