#!/bin/sh
# SPDX-License-Identifier: MIT
# tasks_diff.sh - the differential test of scale_out: tasks, many times:
# tasks.sh in mode random with seeds 1..RUNS, the session timeout
# alternating between 3 s and 10 s (librdkafka's mock cluster refuses
# anything at or below 3 s: 3001 ms stands for 3 s).  Each run compares
# the tasks' visible output with a one-process reference and counts rows
# lost, duplicated and reordered; the sweep prints one line per run and
# exits non-zero at the first failing run.  Not a CTest (about a minute
# per run); `ctest -L kafka` runs three seeds through kafka.tasks_random.
# Usage: tasks_diff.sh TIDEMARK SOURCE_DIR MOCK TOOL [RUNS [FIRST]]
set -eu
runs=${5:-30}
i=${6:-1}
runs=$((i + runs - 1))
while [ "$i" -le "$runs" ]; do
    if [ $((i % 2)) -eq 1 ]; then s=3001; else s=10000; fi
    t0=$(date +%s)
    out=$(SESSION_MS=$s sh "$(dirname "$0")/tasks.sh" "$1" "$2" "$3" "$4" \
        random "$i" 2>&1) || {
        echo "$out" | tail -n 60
        echo "run $i (seed $i, session $s ms): FAILED"
        exit 1
    }
    echo "run $i: $(echo "$out" | grep -E '^tasks random seed' |
        sed 's/^tasks random //'); $(echo "$out" |
        grep -E '^tasks random: ' | sed 's/^tasks random: //'); \
$(($(date +%s) - t0)) s"
    i=$((i + 1))
done
echo "tasks_diff: seeds ${6:-1} to $runs, every run equal to the reference"
