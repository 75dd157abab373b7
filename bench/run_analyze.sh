#!/bin/sh
# SPDX-License-Identifier: MIT
# run_analyze.sh - the `tidemark analyze` benchmark: builds the tidemark
# command and gen_lag with the default optimised flags, writes 10 M JSON
# lines with a known out-of-orderness (4 partitions by field, 10,000 keys,
# exponential lag of mean 100 ms on half the records), then times analyze
# on them: the scan alone (--sample 0) and the default run (scan plus the
# what-if: 1 M records replayed for up to 12 candidates).
# A program, not a test: nothing here is registered with CTest.
#
#   sh bench/run_analyze.sh [-r RUNS] [-b BUILD_DIR] [-n RECORDS]
#                           [-t TIDEMARK]
#
#   -r RUNS     runs per configuration (default 3)
#   -b DIR      build folder (default build-bench; BUILD_TYPE=... picks
#               the CMake build type, default RelWithDebInfo: -O2 -g)
#   -n RECORDS  records to write and read (default 10000000)
#   -t PATH     run this tidemark binary instead of building one
#
# Needs /usr/bin/time (Debian package "time").  The input goes to
# $TDM_BENCH_DATA (default /tmp/tidemark-bench) and is reused while the
# record count is the same.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
runs=3
build="$root/build-bench"
records=10000000
data=${TDM_BENCH_DATA:-/tmp/tidemark-bench}
tdm=""

while getopts r:b:n:t:h opt; do
    case $opt in
    r) runs=$OPTARG ;;
    b) build=$OPTARG ;;
    n) records=$OPTARG ;;
    t) tdm=$OPTARG ;;
    *) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    esac
done

if [ ! -x /usr/bin/time ]; then
    echo "run_analyze.sh: /usr/bin/time is missing (apt-get install time)" >&2
    exit 1
fi

cmake -S "$root" -B "$build" \
    -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" >/dev/null
cmake --build "$build" -j2 --target gen_lag >/dev/null
if [ -z "$tdm" ]; then
    cmake --build "$build" -j2 --target tidemark_cli >/dev/null
    tdm="$build/tidemark"
fi

mkdir -p "$data"
input="$data/analyze-$records.jsonl"
if [ ! -s "$input" ]; then
    echo "writing $records records to $input" >&2
    "$build/gen_lag" -n "$records" -p 4 -k 10000 -s 1 -l 100 -f 0.5 \
        -o "$input.tmp"
    mv "$input.tmp" "$input"
fi
bytes=$(wc -c <"$input")

# One configuration: name, then analyze's options.  Prints one line per
# run and the median wall time.
measure() {
    name=$1
    shift
    walls=""
    for r in $(seq "$runs"); do
        /usr/bin/time -f "%e %U %S %M" -o "$data/time.out" \
            "$tdm" analyze "$input" --ts-field ts --partition-field p \
            --key-field k --window tumbling:10s "$@" >"$data/report.out"
        read -r wall user sys rss <"$data/time.out"
        printf '%-10s run %d: %6.2f s wall, %6.2f s user, %5.2f s sys, ' \
            "$name" "$r" "$wall" "$user" "$sys"
        printf '%4d MB RSS\n' $((rss / 1024))
        walls="$walls $wall"
    done
    med=$(printf '%s\n' $walls | sort -n | awk '{ v[NR] = $1 }
        END { print v[int((NR + 1) / 2)] }')
    printf '%-10s median %.2f s wall, %.1f M records/s\n' "$name" "$med" \
        "$(echo "$records / $med / 1000000" | bc -l)"
}

echo "input: $records records, $bytes bytes; $(nproc) CPUs;" \
    "load $(cut -d' ' -f1-3 /proc/loadavg)"
measure scan --sample 0
measure default
echo "last report: $data/report.out"
