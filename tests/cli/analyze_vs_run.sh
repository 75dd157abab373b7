# analyze_vs_run.sh - the what-if numbers of `tidemark analyze` equal what
# `tidemark run` produces with the same settings on the same data.
#
#   sh tests/cli/analyze_vs_run.sh TIDEMARK SOURCE_DIR GEN_LAG
#
# Streams come from gen_lag (exponential out-of-orderness); three inputs:
# one file, three files (one partition each, one of them silent for a
# while so the files end at different times), and one file partitioned by
# a field.  For each, `analyze --json` replays a small grid of
# (out-of-orderness, allowed lateness); then every candidate runs as a job
# (parallelism 1, watermark.emit on_event, the same window and key, a
# late output and a results file) and the run's outputs are counted:
#   late-output lines           = the candidate's late_output
#   result rows timing "late"   = panes_late (refired panes)
#   result rows timing on_time  = panes_on_time
#   all result rows             = panes_on_time + panes_late + panes_other
#   "N records in" (summary)    = records
. "$(dirname "$0")/lib.sh"
GEN=$3
setup "$@"

"$GEN" -n 30000 -s 1 -k 20 -S 11 -o "$T/one.jsonl"
mkdir "$T/many"
"$GEN" -n 30000 -p 3 -s 1 -k 20 -S 12 -i 2:3000:4000 -D "$T/many"
"$GEN" -n 30000 -p 4 -s 1 -k 20 -S 13 -i 1:2000:3000 -o "$T/field.jsonl"
# Sliding windows send a record to the late output only when all of its
# windows are late: that takes lags of a window's size, so more lag.
"$GEN" -n 30000 -p 2 -s 1 -k 20 -S 14 -l 700 -o "$T/slow.jsonl"

# run_counts: the outputs of the last run, counted: late-output lines,
# result rows with timing on_time, with timing late, all result rows, and
# the summary's "N records in".
run_counts() {
    touch "$T/late.jsonl" "$T/out.jsonl"
    awk -v late="$T/late.jsonl" -v err="$T/run.err" '
        /"timing":"on_time"/ { on++ }
        /"timing":"late"/ { lt++ }
        { rows++ }
        END {
            while ((getline x < late) > 0) lo++
            while ((getline x < err) > 0)
                if (match(x, /: [0-9,]+ records in,/)) {
                    n = substr(x, RSTART + 2, RLENGTH - 14)
                    gsub(",", "", n)
                }
            print lo + 0, on + 0, lt + 0, rows + 0, n
        }' "$T/out.jsonl"
}

checked=0

# compare NAME INPUT PATH_IN_JOB PARTITION_FIELD WINDOW_SPEC WINDOW_YAML
compare() {
    name=$1 input=$2 path=$3 pfield=$4 wspec=$5 wyaml=$6
    popt=""
    pyaml=""
    if [ -n "$pfield" ]; then
        popt="--partition-field $pfield"
        pyaml="    partition: {field: $pfield}"
    fi
    # shellcheck disable=SC2086
    "$TM" analyze "$input" --ts-field ts --key-field k $popt \
        --window "$wspec" --bounds 0,50ms,300ms --lateness 0,200ms \
        --json >"$T/$name.json" 2>"$T/$name.err" ||
        fail "$name: analyze failed: $(cat "$T/$name.err")"
    grep '"bound_ms": [0-9]*, "lateness_ms"' "$T/$name.json" \
        >"$T/$name.cands" || fail "$name: no candidates in the JSON"
    [ "$(wc -l <"$T/$name.cands")" -eq 6 ] ||
        fail "$name: expected 6 candidates"
    # One line per candidate: bound lateness records late_output
    # panes_on_time panes_late panes_other.
    n='([0-9]+)'
    sed -E "s/.*\"bound_ms\": $n, \"lateness_ms\": $n, \"records\": $n, .*\
\"late_output\": $n, .*\"panes_on_time\": $n, \"panes_late\": $n, \
\"panes_other\": $n, .*/\\1 \\2 \\3 \\4 \\5 \\6 \\7/" \
        "$T/$name.cands" >"$T/$name.nums"
    while read -r b l recs lo pon plate poth; do
        rm -f "$T/out.jsonl" "$T/late.jsonl"
        cat >"$T/job.yaml" <<EOF
name: vs
parallelism: 1
sources:
  in:
    path: $path
$pyaml
    schema: {ts: int64, p: int64, k: string}
    timestamp: {field: ts}
    watermark:
      strategy: bounded
      max_out_of_orderness: ${b}ms
      emit: on_event
windows:
  w:
    from: in
    key_by: k
    window: $wyaml
    allowed_lateness: ${l}ms
    sink: out
    late_output: late
sinks:
  out: {type: file, path: $T/out.jsonl}
  late: {type: file, path: $T/late.jsonl}
EOF
        "$TM" run "$T/job.yaml" --quiet 2>"$T/run.err" ||
            fail "$name: run failed: $(cat "$T/run.err")"
        # shellcheck disable=SC2046
        set -- $(run_counts)
        got_lo=$1 got_on=$2 got_late=$3 got_rows=$4 got_in=${5:-?}
        what="$name bound ${b}ms lateness ${l}ms"
        [ "$got_lo" -eq "$lo" ] ||
            fail "$what: late output: run $got_lo, analyze $lo"
        [ "$got_late" -eq "$plate" ] ||
            fail "$what: late panes: run $got_late, analyze $plate"
        [ "$got_on" -eq "$pon" ] ||
            fail "$what: on-time panes: run $got_on, analyze $pon"
        [ "$got_rows" -eq $((pon + plate + poth)) ] ||
            fail "$what: result rows: run $got_rows, analyze" \
                "$((pon + plate + poth))"
        [ "$got_in" = "$recs" ] ||
            fail "$what: records: run $got_in, analyze $recs"
        checked=$((checked + 1))
    done <"$T/$name.nums"
    # The grid must exercise lateness: some candidate sends records to
    # the late output and some refires.
    grep -q '"late_output": [1-9]' "$T/$name.cands" ||
        fail "$name: no candidate has late records (weak test data)"
    grep -q '"panes_late": [1-9]' "$T/$name.cands" ||
        fail "$name: no candidate refires (weak test data)"
}

compare one "$T/one.jsonl" "$T/one.jsonl" "" tumbling:1s \
    "{type: tumbling, size: 1s}"
compare many "$T/many/*.jsonl" "$T/many/*.jsonl" "" tumbling:1s \
    "{type: tumbling, size: 1s}"
compare field "$T/field.jsonl" "$T/field.jsonl" p tumbling:1s \
    "{type: tumbling, size: 1s}"
compare sliding "$T/slow.jsonl" "$T/slow.jsonl" p sliding:1s:250ms \
    "{type: sliding, size: 1s, slide: 250ms}"
compare session "$T/one.jsonl" "$T/one.jsonl" "" session:300ms \
    "{type: session, gap: 300ms}"

[ "$checked" -eq 30 ] || fail "checked $checked candidates, expected 30"

# ---- --job: the recommendation and the job's own settings, run ----
# analyze reads the job's source and window; the what-if row of the
# recommendation (role "recommended") and of the job's settings (role
# "job") must be what `tidemark run` of that job produces, the first
# with the --set line the report prints.
printf '%s\n' "name: vsjob" "parallelism: 1" "sources:" "  in:" \
    "    path: $T/one.jsonl" "    schema: {ts: int64, p: int64, k: string}" \
    "    timestamp: {field: ts}" \
    "    watermark: {strategy: bounded, max_out_of_orderness: 30ms, emit: on_event}" \
    "windows:" "  w:" "    from: in" "    key_by: k" \
    "    window: {type: tumbling, size: 1s}" "    allowed_lateness: 50ms" \
    "    sink: out" "    late_output: late" "sinks:" \
    "  out: {type: file, path: $T/out.jsonl}" \
    "  late: {type: file, path: $T/late.jsonl}" >"$T/vsjob.yaml"
"$TM" analyze --job "$T/vsjob.yaml" --target 0.5% --json >"$T/vsjob.json" \
    2>"$T/vsjob.err" || fail "job: analyze failed: $(cat "$T/vsjob.err")"
"$TM" analyze --job "$T/vsjob.yaml" --target 0.5% >"$T/vsjob.txt" \
    2>"$T/vsjob.err" || fail "job: analyze failed: $(cat "$T/vsjob.err")"
sets=$(sed -n 's/^  Try it: tidemark run [^ ]* //p' "$T/vsjob.txt")
[ -n "$sets" ] || fail "job: no 'Try it' line in the report"
n='([0-9]+)'
for role in recommended job; do
    line=$(grep "\"role\": \"$role\"" "$T/vsjob.json") ||
        fail "job: no what-if row with role $role"
    set -- $(echo "$line" | sed -E "s/.*\"bound_ms\": $n, \"lateness_ms\": $n, \
\"records\": $n, .*\"late_output\": $n, .*\"panes_on_time\": $n, \
\"panes_late\": $n, .*/\\1 \\2 \\3 \\4 \\5 \\6/")
    b=$1 l=$2 recs=$3 lo=$4 pon=$5 plate=$6
    rm -f "$T/out.jsonl" "$T/late.jsonl"
    if [ "$role" = job ]; then
        [ "$b" -eq 30 ] && [ "$l" -eq 50 ] || fail "job: row $b/$l, not 30/50"
        "$TM" run "$T/vsjob.yaml" --quiet 2>"$T/run.err" ||
            fail "job: run failed: $(cat "$T/run.err")"
    else
        case "$sets" in
        *"max_out_of_orderness=${b}ms "*"allowed_lateness=${l}ms"*) ;;
        *) fail "job: --set line '$sets' is not the row's ${b}ms / ${l}ms" ;;
        esac
        # shellcheck disable=SC2086
        "$TM" run "$T/vsjob.yaml" $sets --quiet 2>"$T/run.err" ||
            fail "job: run $sets failed: $(cat "$T/run.err")"
    fi
    set -- $(run_counts)
    [ "$1" -eq "$lo" ] || fail "job $role: late output: run $1, analyze $lo"
    [ "$2" -eq "$pon" ] || fail "job $role: on-time panes: run $2, analyze $pon"
    [ "$3" -eq "$plate" ] || fail "job $role: late panes: run $3, analyze $plate"
    [ "$5" = "$recs" ] || fail "job $role: records: run $5, analyze $recs"
    checked=$((checked + 1))
done
# The recommendation meets the target: late (not in the first result)
# at most 0.5% of the records, and the bound below it does not.
grep -q '"recommended": {"target": 0.005, "checked": true,' "$T/vsjob.json" ||
    fail "job: the recommendation was not checked by replays"
re='.*"recommended": [{].*"late": ([0-9]+), "counted": ([0-9]+), '
re="$re"'"below_ms": ([0-9-]+), "below_late": ([0-9-]+),.*'
# shellcheck disable=SC2046
set -- $(sed -nE "s/$re/\\1 \\2 \\3 \\4/p" "$T/vsjob.json")
[ $(($1 * 1000)) -le $(($2 * 5)) ] ||
    fail "job: $1 of $2 late, above the 0.5% target"
[ "$3" -lt 0 ] || [ $(($4 * 1000)) -gt $(($2 * 5)) ] ||
    fail "job: the bound below ($3 ms, $4 late) meets the target too"
echo "analyze_vs_run: $checked candidates equal to tidemark run"
