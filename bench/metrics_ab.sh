#!/bin/sh
# SPDX-License-Identifier: MIT
# metrics_ab.sh - CPU seconds (user + sys) of two tidemark binaries on the
# runtime benchmark's jobs at parallelism 1, runs alternating one by one so
# that both see the same machine; prints each binary's runs sorted, best
# first.  Used to measure what the metrics cost (docs/metrics.md, "Cost").
# A program, not a test.
#
#   sh bench/metrics_ab.sh BEFORE AFTER [JOB ...]   (default: gen_count)
#
# json_count reads /tmp/tidemark-bench/clicks-*.jsonl: run
# bench/run_runtime.sh once first to write them.
set -eu
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { echo "usage: sh bench/metrics_ab.sh BEFORE AFTER [JOB ...]" >&2; exit 2; }
before=$1; after=$2; shift 2
[ $# -gt 0 ] || set -- gen_count
runs=${RUNS:-8}
t=$(mktemp)
trap 'rm -f "$t" "$t.log"' EXIT
for job in "$@"; do
    i=0
    while [ $i -lt "$runs" ]; do
        for which in before after; do
            if [ $which = before ]; then bin=$before; else bin=$after; fi
            /usr/bin/time -f "%U %S" -o "$t" "$bin" run "bench/runtime/$job.yaml" \
                --quiet --parallelism 1 >/dev/null 2>&1
            echo "$which $(awk '{print $1 + $2}' "$t")" >> "$t.log"
        done
        i=$((i + 1))
    done
    for which in before after; do
        printf '%-10s %-7s %s\n' "$job" "$which" \
            "$(grep "^$which " "$t.log" | awk '{print $2}' | sort -n | tr '\n' ' ')"
    done
    rm -f "$t.log"
done
