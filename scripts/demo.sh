#!/bin/sh
# demo.sh - builds tidemark and runs the main demo job on bundled data:
# examples/uv.yaml, unique visitors and views per page in 5-minute tumbling
# windows with 30 s out-of-orderness, 2 min allowed lateness, a late side
# output and a dead-letter output, then prints what each output received.
set -eu
cd "$(dirname "$0")/.."
sh scripts/deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j2 --target tidemark_cli >/dev/null
echo "\$ tidemark run examples/uv.yaml"
./build/tidemark run examples/uv.yaml
for f in uv:results uv-late:"late side output" uv-bad:"dead letters"; do
    file=${f%%:*}
    echo
    echo "== ${f#*:} (out/$file.jsonl)"
    cat "out/$file.jsonl"
done
