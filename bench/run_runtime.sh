#!/bin/sh
# SPDX-License-Identifier: MIT
# run_runtime.sh - the runtime benchmark: builds the tidemark command with
# the default optimised flags, writes the JSON-lines input into /tmp, runs
# each job of bench/runtime/ several times through `tidemark run` and
# prints one table (records/s by wall clock, CPU per record, peak RSS).
# A program, not a test: nothing here is registered with CTest.
#
#   sh bench/run_runtime.sh [-r RUNS] [-b BUILD_DIR] [-g RECORDS]
#                           [-j LINES] [-c CONFIGS] [-t TIDEMARK]
#
#   -r RUNS     runs per configuration (default 5)
#   -b DIR      build folder (default build-bench; BUILD_TYPE=... picks
#               the CMake build type, default RelWithDebInfo: -O2 -g)
#   -g RECORDS  generated records of the gen and keys jobs (default 20 M
#               and 30 M)
#   -j LINES    JSON lines to write and read (default 10 M, 4 files)
#   -c CONFIGS  comma-separated subset of gen-p1,gen-p2,json-p1,json-p2,
#               keys1m-p1,keys1m-p2 (default: all of these), and
#               keys1m-ck-p1,keys1m-ck-p2: the 1 M-key job with
#               checkpoint.dir set (interval: CK_INTERVAL, default 10s;
#               the checkpoint line of each run is printed after the
#               table)
#   -t PATH     run this tidemark binary instead of building one (to
#               compare two versions; gen_jsonl is still compiled)
#
# Needs /usr/bin/time (Debian package "time").  The JSON files go to
# $TDM_BENCH_DATA (default /tmp/tidemark-bench) and are reused while the
# line count is the same.
set -eu

root=$(cd "$(dirname "$0")/.." && pwd)
runs=5
build="$root/build-bench"
gen_records=""
json_lines=10000000
configs="gen-p1,gen-p2,json-p1,json-p2,keys1m-p1,keys1m-p2"
data=${TDM_BENCH_DATA:-/tmp/tidemark-bench}
tdm=""

while getopts r:b:g:j:c:t:h opt; do
    case $opt in
    r) runs=$OPTARG ;;
    b) build=$OPTARG ;;
    g) gen_records=$OPTARG ;;
    j) json_lines=$OPTARG ;;
    c) configs=$OPTARG ;;
    t) tdm=$OPTARG ;;
    *) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
    esac
done

if [ ! -x /usr/bin/time ]; then
    echo "run_runtime.sh: /usr/bin/time is missing (apt-get install time)" >&2
    exit 1
fi

# ---- Build ----
if [ -z "$tdm" ]; then
    cmake -S "$root" -B "$build" \
        -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" >/dev/null
    cmake --build "$build" -j2 --target tidemark_cli >/dev/null
    tdm="$build/tidemark"
fi
mkdir -p "$build"
${CC:-cc} -O2 -std=c11 -o "$build/gen_jsonl" "$root/bench/runtime/gen_jsonl.c"

# ---- Input ----
case ",$configs," in
*,json-*)
    mkdir -p "$data"
    if [ "$(cat "$data/lines" 2>/dev/null || true)" != "$json_lines" ]; then
        echo "writing $json_lines JSON lines to $data ..." >&2
        rm -f "$data"/clicks-*.jsonl "$data/lines"
        "$build/gen_jsonl" "$data" "$json_lines" 4
        echo "$json_lines" >"$data/lines"
    fi
    ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# ---- One configuration ----
# run_config NAME JOB PARALLELISM [--set ...]: RUNS runs, one result line.
run_config() {
    name=$1 job=$2 par=$3
    shift 3
    : >"$tmp/runs"
    i=0
    while [ "$i" -lt "$runs" ]; do
        i=$((i + 1))
        rm -rf "$tmp/ck"
        if ! /usr/bin/time -f '%e %U %S %M' -o "$tmp/time" \
            "$tdm" run "$root/bench/runtime/$job" --quiet \
            --parallelism "$par" "$@" 2>"$tmp/err"; then
            echo "run_runtime.sh: $name failed:" >&2
            cat "$tmp/err" >&2
            exit 1
        fi
        # "job "x" finished after 1.234 s: 20,000,000 records in, ..."
        recs=$(sed -n 's/.*: \([0-9,]*\) records in,.*/\1/p' "$tmp/err" |
            tr -d ,)
        [ -n "$recs" ] || { cat "$tmp/err" >&2; exit 1; }
        # wall user sys rss_kb records
        echo "$(tail -n 1 "$tmp/time") $recs" >>"$tmp/runs"
        # "checkpoint 2 completed: 24000000 bytes, ..." per checkpoint
        # and "checkpoints: 3 completed, 0 failed; ..." (ck runs)
        sed -n -e "s/^tidemark: \(checkpoints: .*\)/$name run $i: \1/p" \
            -e "s/^tidemark: \(checkpoint [0-9]* completed.*\)/$name run $i: \1/p" \
            "$tmp/err" >>"$tmp/cklines"
    done
    # Records/s per run (wall), CPU ns per record, peak RSS; best and
    # median of the runs.
    awk -v name="$name" -v par="$par" '
        { n++; w = $1 > 0 ? $1 : 0.01
          rate[n] = $5 / w; cpu[n] = ($2 + $3) * 1e9 / $5
          rss[n] = $4 / 1024; recs = $5 }
        function sort(a, n,   i, j, t) {
            for (i = 2; i <= n; i++)
                for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
                    t = a[j]; a[j] = a[j - 1]; a[j - 1] = t } }
        function median(a, n) {
            return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }
        END {
            sort(rate, n); sort(cpu, n); sort(rss, n)
            printf "| %-9s | %d | %5.1f M | %5.1f M | %5.1f M ", name, par,
                recs / 1e6, rate[n] / 1e6, median(rate, n) / 1e6
            printf "| %4.0f - %4.0f | %5.2f M | %6.1f |\n", cpu[1],
                median(cpu, n), 1e3 / median(cpu, n), rss[n]
        }' "$tmp/runs"
}

# ---- Report ----
# What else runs: the load average, and processes that used 5% of a CPU
# or more over their lifetime (this script's own tools left out).
load() { uptime | sed 's/.*load average/load average/'; }
busy() {
    ps -eo pcpu=,comm= --sort=-pcpu |
        awk '$1 >= 5 && $2 !~ /^(ps|sh|awk|sed|head)$/ {
                 printf "%s %s%%  ", $2, $1 }' | head -c 200
}
model=$(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -n 1)
echo "date:     $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine:  $(nproc) CPUs, $model"
echo "compiler: $(${CC:-cc} --version | head -n 1)," \
    "build ${BUILD_TYPE:-RelWithDebInfo}"
echo "binary:   $tdm"
echo "runs:     $runs per configuration"
echo "load:     $(load) (before)"
echo "busy:     $(busy)"
echo
echo "| config | P | records | best rec/s | median rec/s" \
    "| CPU ns/rec (best - median) | rec/CPU-s | peak RSS MB |"
echo "|---|---|---|---|---|---|---|---|"
gen_set=""
[ -n "$gen_records" ] && gen_set="sources.clicks.generator.records=$gen_records"
for c in $(echo "$configs" | tr , ' '); do
    case $c in
    gen-p1 | gen-p2)
        p=${c#gen-p}
        if [ -n "$gen_set" ]; then
            run_config "$c" gen_count.yaml "$p" --set "$gen_set"
        else
            run_config "$c" gen_count.yaml "$p"
        fi
        ;;
    json-p1 | json-p2)
        run_config "$c" json_count.yaml "${c#json-p}" \
            --set "sources.clicks.path=$data/clicks-*.jsonl"
        ;;
    keys1m-ck-p1 | keys1m-ck-p2)
        p=${c#keys1m-ck-p}
        ck="--set checkpoint.dir=$tmp/ck --set"
        ck="$ck checkpoint.interval=${CK_INTERVAL:-10s}"
        if [ -n "$gen_set" ]; then
            run_config "$c" keys_1m.yaml "$p" --set "$gen_set" $ck
        else
            run_config "$c" keys_1m.yaml "$p" $ck
        fi
        ;;
    keys1m-p1 | keys1m-p2)
        p=${c#keys1m-p}
        if [ -n "$gen_set" ]; then
            run_config "$c" keys_1m.yaml "$p" --set "$gen_set"
        else
            run_config "$c" keys_1m.yaml "$p"
        fi
        ;;
    *)
        echo "run_runtime.sh: unknown configuration '$c'" >&2
        exit 2
        ;;
    esac
done
echo
if [ -s "$tmp/cklines" ]; then
    cat "$tmp/cklines"
    echo
fi
echo "load:     $(load) (after)"
