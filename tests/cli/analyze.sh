# analyze.sh - end-to-end tests of `tidemark analyze`: the command line
# (help, usage errors, exit codes), bad input, stdin and CSV, the report's
# recommendations on streams with a known distribution (gen_lag), the
# warnings, --json and --plot.  The numbers themselves are tested against
# hand-derived values in tests/unit/test_analyze.c and against `tidemark
# run` in tests/cli/analyze_vs_run.sh.
#
#   sh tests/cli/analyze.sh TIDEMARK SOURCE_DIR GEN_LAG
. "$(dirname "$0")/lib.sh"
GEN=$3
setup "$@"
START=1767225600000

# ---- Help and usage ----
expect_exit "analyze --help" 0 "$TM" analyze --help
expect_in "analyze --help" "$T/out" "usage: tidemark analyze INPUT..."
expect_exit "help analyze" 0 "$TM" help analyze
expect_in "help analyze" "$T/out" "--ts-field F"
expect_exit "tidemark --help" 0 "$TM" --help
expect_in "tidemark --help" "$T/out" "analyze INPUT..."
expect_exit "no input" 2 "$TM" analyze --ts-field ts
expect_in "no input" "$T/err" "no INPUT given"
"$GEN" -n 2000 -o "$T/small.jsonl"
expect_exit "no --ts-field" 2 "$TM" analyze "$T/small.jsonl"
expect_in "no --ts-field" "$T/err" "--ts-field is required"
expect_exit "bad window" 2 "$TM" analyze "$T/small.jsonl" --ts-field ts \
    --window hopping:5m
expect_in "bad window" "$T/err" '--window: expected tumbling:SIZE'
expect_exit "bad bounds" 2 "$TM" analyze "$T/small.jsonl" --ts-field ts \
    --bounds 1s,soon
expect_in "bad bounds" "$T/err" '--bounds: expected durations'
expect_exit "unknown option" 2 "$TM" analyze "$T/small.jsonl" \
    --ts-field ts --frobnicate
expect_in "unknown option" "$T/err" 'unknown option "--frobnicate"'
expect_exit "unknown field" 2 "$TM" analyze "$T/small.jsonl" \
    --ts-field ts --schema "ts:int64" --key-field user
expect_in "unknown field" "$T/err" '--key-field: "user" is not in the schema'
expect_exit "missing file" 1 "$TM" analyze "$T/nope.jsonl" --ts-field ts
expect_in "missing file" "$T/err" "cannot open '$T/nope.jsonl'"
expect_exit "empty glob" 1 "$TM" analyze "$T/nothing-*.jsonl" --ts-field ts
expect_in "empty glob" "$T/err" "no file matches"

# ---- Bad lines: reported with file:line and the field, counted ----
{
    echo '{"ts":1000,"k":"a"}'
    echo '{"ts":"late","k":"a"}'
    echo '{"k":"b"}'
    echo '{"ts":900,"k":"a"}'
} >"$T/bad.jsonl"
expect_exit "bad lines" 0 "$TM" analyze "$T/bad.jsonl" --ts-field ts \
    --dead-letter "$T/dead.jsonl"
expect_in "bad lines" "$T/err" "bad record at $T/bad.jsonl:2: field 'ts'"
expect_in "bad lines" "$T/err" \
    "bad record at $T/bad.jsonl:3: field 'ts' is missing"
expect_in "bad lines" "$T/out" "2 records from 1 input (2 bad)"
[ "$(wc -l <"$T/dead.jsonl")" -eq 2 ] || fail "bad lines: 2 dead letters"
expect_in "bad lines" "$T/dead.jsonl" "\"location\":\"$T/bad.jsonl:3\""

# ---- A known distribution: exponential lag, mean 100 ms, half lagged ----
# P99 = ceil(100 ln 50 - 1) = 391 (tests/unit/test_analyze.c derives it;
# +-12 ms for sampling), so the recommended bound, rounded up to two
# digits, is 380 .. 410 ms.
"$GEN" -n 100000 -s 1 -o "$T/exp.jsonl"
expect_exit "exp" 0 "$TM" analyze "$T/exp.jsonl" --ts-field ts \
    --key-field k --window tumbling:1s --sample 20000
expect_in "exp" "$T/out" "Out-of-orderness"
expect_in "exp" "$T/out" "Recommendation (target: at most 1.00% of records late"
expect_in "exp" "$T/out" "What-if: the first 20,000 records"
grep -Eq 'max_out_of_orderness: (38|39|40|41)0ms ' "$T/out" ||
    fail "exp: bound not within 380..410ms: $(grep max_out "$T/out")"
expect_in "exp" "$T/out" "watermark.idle_timeout: 1s"

# stdin reads the same records.
expect_exit "stdin" 0 sh -c "'$TM' analyze - --ts-field ts --sample 0 \
    <'$T/exp.jsonl'"
expect_in "stdin" "$T/out" "100,000 records from 1 input (0 bad)"

# CSV by extension.
{
    echo "ts,k"
    echo "1000,a"
    echo "1200,b"
    echo "1100,a"
} >"$T/small.csv"
expect_exit "csv" 0 "$TM" analyze "$T/small.csv" --ts-field ts --json
expect_in "csv" "$T/out" '"records": 3'
expect_in "csv" "$T/out" '"max": 100'

# ---- Warnings ----
"$GEN" -n 500 -s 1000 -u s -o "$T/sec.jsonl"
expect_exit "seconds" 0 "$TM" analyze "$T/sec.jsonl" --ts-field ts
expect_in "seconds" "$T/out" "timestamps look like seconds"
expect_in "seconds" "$T/out" "--unit s"
"$GEN" -n 5000 -F 50 -o "$T/future.jsonl"
expect_exit "future" 0 "$TM" analyze "$T/future.jsonl" --ts-field ts \
    --now 2026-01-01T00:00:00Z
expect_in "future" "$T/out" \
    "future: 100 records have timestamps more than 1h after now"
"$GEN" -n 90000 -p 3 -s 1 -f 0 -i 2:10000:60000 -o "$T/idle.jsonl"
expect_exit "idle" 0 "$TM" analyze "$T/idle.jsonl" --ts-field ts \
    --partition-field p --partitions 4 --claim-monotonic --sample 0
expect_in "idle" "$T/out" "silent longer than that (marked idle): 2 for 1m"
expect_in "idle" "$T/out" "no_data: expected partition 3 has no records"
if grep -q "not_monotonic" "$T/out"; then
    fail "idle: in-order partitions reported as not monotonic"
fi
"$GEN" -n 3000 -o "$T/lagged.jsonl"
expect_exit "monotonic" 0 "$TM" analyze "$T/lagged.jsonl" --ts-field ts \
    --claim-monotonic --sample 0
expect_in "monotonic" "$T/out" \
    "not_monotonic: partition $T/lagged.jsonl was claimed monotonic"

# ---- --json and --plot ----
expect_exit "json" 0 "$TM" analyze "$T/exp.jsonl" --ts-field ts \
    --key-field k --window tumbling:1s --bounds 0,400ms --lateness 0,1s \
    --json --plot "$T/plot.svg"
expect_in "json" "$T/out" '"version": 1'
[ "$(grep -c '"bound_ms": [0-9]*, "lateness_ms"' "$T/out")" -eq 4 ] ||
    fail "json: expected 4 what-if candidates"
if command -v python3 >/dev/null 2>&1; then
    python3 -m json.tool <"$T/out" >/dev/null || fail "json: not valid JSON"
fi
[ -s "$T/plot.svg" ] || fail "plot: no SVG written"
expect_in "plot" "$T/plot.svg" "<svg xmlns=\"http://www.w3.org/2000/svg\""
expect_in "plot" "$T/plot.svg" ">B=400ms<"
expect_in "plot" "$T/plot.svg" ">L=1s<"
if command -v xmllint >/dev/null 2>&1; then
    xmllint --noout "$T/plot.svg" || fail "plot: not well-formed XML"
fi
expect_exit "plot unwritable" 1 "$TM" analyze "$T/small.jsonl" \
    --ts-field ts --sample 0 --plot "$T/no/such/dir/p.svg"
expect_in "plot unwritable" "$T/err" "--plot: cannot write"


# ---- Warnings come before the recommendation ----
expect_exit "order" 0 "$TM" analyze "$T/future.jsonl" --ts-field ts \
    --now 2026-01-01T00:00:00Z --sample 1000
w=$(grep -n '^Warnings$' "$T/out" | cut -d: -f1)
r=$(grep -n '^Recommendation' "$T/out" | cut -d: -f1)
{ [ -n "$w" ] && [ -n "$r" ] && [ "$w" -lt "$r" ]; } ||
    fail "order: warnings (line ${w:-none}) not before the recommendation" \
        "(line ${r:-none})"

# ---- A unit mix-up anywhere: 0.5% in seconds after the first 100 ----
# 20,000 records 10 ms apart, every 10th 150 ms behind; from record 200
# on, every 200th is written in epoch seconds.  The first is line 201.
awk -v s=$START 'BEGIN {
    for (i = 0; i < 20000; i++) {
        t = s + i * 10
        if (i >= 100 && i % 200 == 0) printf "{\"ts\":%.0f}\n", int(t / 1000)
        else if (i % 10 == 5) printf "{\"ts\":%.0f}\n", t - 150
        else printf "{\"ts\":%.0f}\n", t
    } }' >"$T/mixed.jsonl"
expect_exit "mixed" 0 "$TM" analyze "$T/mixed.jsonl" --ts-field ts \
    --window tumbling:1s
expect_in "mixed" "$T/out" \
    "unit_mixed: 99 records (0.495% of 20000, in 1 partition)"
expect_in "mixed" "$T/out" \
    "the first is at $T/mixed.jsonl:201, value 1767225602"
expect_in "mixed" "$T/out" "99 records in another unit left out"
# The lag is the 140 ms of the lagged records (150 ms behind the clock,
# 140 ms behind the record before), not 56 years.
grep -Eq '^  all +19,901 +10.05% +0ms +140ms +140ms +140ms +140ms +140ms ' \
    "$T/out" || fail "mixed: lag not 140ms: $(grep '^  all' "$T/out")"
expect_in "mixed" "$T/out" "watermark.max_out_of_orderness: 140ms    P99"
if grep -E '(max_out_of_orderness|allowed_lateness): [0-9hmsd]*h' \
    "$T/out" >&2; then
    fail "mixed: a recommendation in hours"
fi

# ---- --target: the exact count decides, not the rounded quantile ----
# 20,000 records 10 ms apart; 120 exactly 14 s behind, 100 exactly 20 s
# behind (tests/unit/test_analyze.c, target_checks_the_exact_count, has
# the arithmetic): 14 s makes 100 late (0.5%), 13 s 220 (1.1%); the P99
# rounded up is 15 s.
awk -v s=$START 'BEGIN {
    for (i = 0; i < 20000; i++) {
        t = s + i * 10
        if (i > 3000 && i % 100 == 7 && a < 120) { a++; t = m - 14000 }
        else if (i > 3000 && i % 100 == 57 && b < 100) { b++; t = m - 20000 }
        else m = t
        printf "{\"ts\":%.0f,\"k\":\"a\"}\n", t
    } }' >"$T/target.jsonl"
expect_exit "target" 0 "$TM" analyze "$T/target.jsonl" --ts-field ts \
    --window tumbling:1s --target 1%
expect_in "target" "$T/out" "watermark.max_out_of_orderness: 14s"
expect_in "target" "$T/out" "0.50% of records late (100 of 20,000, exact)"
expect_in "target" "$T/out" "13s would make 1.10% late (220)"
expect_exit "target 0.004" 0 "$TM" analyze "$T/target.jsonl" --ts-field ts \
    --window tumbling:1s --target 0.004 --json
expect_in "target 0.004" "$T/out" \
    '"recommended": {"target": 0.004, "checked": true, "bound_ms": 20000, "late": 0,'
expect_exit "bad target" 2 "$TM" analyze "$T/target.jsonl" --ts-field ts \
    --target 5
expect_in "bad target" "$T/err" \
    "--target: expected the accepted late fraction"
expect_exit "bad target %" 2 "$TM" analyze "$T/target.jsonl" --ts-field ts \
    --target 1x%
# The recommendation (bound, lateness) is a row of the default grid.
expect_exit "reco row" 0 "$TM" analyze "$T/target.jsonl" --ts-field ts \
    --window tumbling:1s --json
grep -q '"bound_ms": 14000, "lateness_ms": 6000, .*"role": "recommended"' \
    "$T/out" || fail "reco row: no what-if row 14s / 6s marked recommended"
expect_in "reco row" "$T/out" \
    '"lateness_ms": 6000, "lateness_covers": "max", "late_output": 0,'

# ---- Any number of --bounds and --lateness values ----
expect_exit "many" 0 "$TM" analyze "$T/exp.jsonl" --ts-field ts \
    --sample 2000 --bounds 0,10,20,30,40,50,60,70,80,90,100,110 \
    --lateness 0,1,2,3,4,5,6,7,8,9 --json
[ "$(grep -c '"bound_ms": [0-9]*, "lateness_ms"' "$T/out")" -eq 120 ] ||
    fail "many: expected 12 x 10 = 120 what-if candidates"
grep -q '"bound_ms": 110, "lateness_ms": 9,' "$T/out" ||
    fail "many: the 12th bound with the 10th lateness is missing"
# A list longer than any fixed buffer: 300 values (1,800 characters).
list=$(awk 'BEGIN { for (i = 1; i <= 300; i++)
    printf "%s%dms", (i > 1 ? "," : ""), i }')
expect_exit "long list" 0 "$TM" analyze "$T/exp.jsonl" --ts-field ts \
    --sample 500 --bounds "$list" --lateness 0 --json
[ "$(grep -c '"bound_ms": [0-9]*, "lateness_ms"' "$T/out")" -eq 300 ] ||
    fail "long list: expected 300 what-if candidates"
grep -q '"bound_ms": 300, "lateness_ms": 0,' "$T/out" ||
    fail "long list: the last bound is missing"

# ---- --job: the source's settings from the job file ----
printf '%s\n' "name: an" "sources:" "  clicks:" "    path: $T/exp.jsonl" \
    "    schema: {ts: int64, p: int64, k: string}" \
    "    timestamp: {field: ts, unit: ms}" \
    "    watermark: {strategy: bounded, max_out_of_orderness: 50ms, emit: on_event}" \
    "windows:" "  counts:" "    from: clicks" "    key_by: k" \
    "    window: {type: tumbling, size: 1s}" "    allowed_lateness: 100ms" \
    "    sink: out" "    late_output: late" "sinks:" \
    "  out: {type: file, path: $T/out.jsonl}" \
    "  late: {type: file, path: $T/late.jsonl}" >"$T/job.yaml"
expect_exit "job" 0 "$TM" analyze --job "$T/job.yaml" --sample 20000
expect_in "job" "$T/out" \
    "settings of source clicks and window counts from $T/job.yaml"
expect_in "job" "$T/out" "What-if: the first 20,000 records"
expect_in "job" "$T/out" "(tumbling:1s, watermark.emit"
expect_in "job" "$T/out" \
    "Your job ($T/job.yaml, source clicks) has max_out_of_orderness 50ms and allowed_lateness 100ms;"
expect_in "job" "$T/out" "at that bound "
expect_in "job" "$T/out" "<- your job"
expect_in "job" "$T/out" "      clicks:"
expect_in "job" "$T/out" "      counts:"
expect_in "job" "$T/out" "        late_output: late"
expect_in "job" "$T/out" \
    "Try it: tidemark run $T/job.yaml --set sources.clicks.watermark.max_out_of_orderness="
# The job's row is the job's settings; the key is its key_by.
expect_exit "job json" 0 "$TM" analyze --job "$T/job.yaml" clicks \
    --sample 20000 --json
grep -q '"bound_ms": 50, "lateness_ms": 100, .*"role": "job"' "$T/out" ||
    fail "job json: no what-if row for the job's 50ms / 100ms"
expect_in "job json" "$T/out" \
    '"job": {"bound_ms": 50, "lateness_ms": 100, "late": '
expect_in "job json" "$T/out" '"key_fields": "k"'
# The command line wins, and says so.
expect_exit "job override" 0 "$TM" analyze --job "$T/job.yaml" \
    --window tumbling:5s --sample 2000
expect_in "job override" "$T/out" \
    "note: --window tumbling:5s (command line) replaces the window of counts ($T/job.yaml:"
expect_in "job override" "$T/out" "(tumbling:5s, watermark.emit"
expect_exit "job input" 0 "$TM" analyze --job "$T/job.yaml" \
    "$T/small.jsonl" --sample 0
expect_in "job input" "$T/out" "2,000 records from 1 input"
expect_in "job input" "$T/out" \
    "note: INPUT $T/small.jsonl (command line) replaces path: $T/exp.jsonl ($T/job.yaml:4:"
# Two sources: name one; a Kafka source needs an INPUT.
printf '%s\n' "sources:" \
    "  a: {path: $T/small.jsonl, schema: {ts: int64}, timestamp: {field: ts}}" \
    "  b: {type: kafka, brokers: \"localhost:9\", topics: t, schema: {ts: int64}, timestamp: {field: ts}}" \
    "sinks:" "  out: {type: file, path: $T/o.jsonl}" >"$T/job2.yaml"
expect_exit "job two" 2 "$TM" analyze --job "$T/job2.yaml"
expect_in "job two" "$T/err" \
    "the job has several sources (a, b): name the one"
expect_exit "job a" 0 "$TM" analyze --job "$T/job2.yaml" a --sample 0
expect_in "job a" "$T/out" "2,000 records from 1 input"
expect_exit "job kafka" 2 "$TM" analyze --job "$T/job2.yaml" b
expect_in "job kafka" "$T/err" \
    "source b is of type kafka: analyze reads files; give INPUT"
printf 'sources:\n  a: {pathh: x}\n' >"$T/bad.yaml"
expect_exit "job invalid" 3 "$TM" analyze --job "$T/bad.yaml"
expect_in "job invalid" "$T/err" "$T/bad.yaml:2:"

# ---- Rule live_bound: the bound per hour, and `tidemark set` ----
# One record a second for 4 hours; in hour h every 50th second
# (i % 50 == 25) is lag[h] behind the second before: 72 of 3,600 records
# (2%), so each hour's P99 is its lag: 200ms, 1500ms, 4s, 200ms.  With
# tumbling:1s a record 200 ms behind is late only at bound 0, 1.5 s
# behind up to 1000, 4 s behind up to 3000: the recommendation is 1ms
# (144 late of 14,400: 1%), and the hours need 1ms, 1100ms, 3100ms, 1ms
# (tests/unit/test_analyze.c, live_bound_drifting_disorder, has the
# arithmetic).  3100 >= 2 x 1 and >= 1s more: worth it, with a
# `tidemark set` line at each change.  Without a sample the bounds are
# the P99s.
drift() {
    awk -v s=$START -v lags="$1" 'BEGIN { split(lags, L, " ")
        for (h = 0; h < 4; h++) for (i = 0; i < 3600; i++) {
            t = s + (h * 3600 + i) * 1000
            if (i % 50 == 25) t = m - L[h + 1]; else m = t
            printf "{\"ts\":%.0f,\"k\":\"a\"}\n", t } }'
}
drift "200 1500 4000 200" >"$T/drift.jsonl"
expect_exit "live" 0 "$TM" analyze "$T/drift.jsonl" --ts-field ts \
    --window tumbling:1s
expect_in "live" "$T/out" \
    "  2026-01-01T01:00:00Z      3,600            2.00%     1100ms"
expect_in "live" "$T/out" \
    "  2026-01-01T03:00:00Z      3,600               0%        1ms"
expect_in "live" "$T/out" "live_bound: a live bound is worth it"
SET="tidemark set http://HOST:PORT sources.SOURCE.watermark.max_out_of_orderness"
expect_in "live" "$T/out" "    at 2026-01-01T02:00:00Z  $SET=3100ms"
expect_in "live" "$T/out" "    at 2026-01-01T03:00:00Z  $SET=1ms"
expect_in "live" "$T/out" "On a running job (tidemark run JOB --http ADDR), live:"
[ "$(grep -c "^    at 2026-01-01T" "$T/out")" -eq 4 ] ||
    fail "live: expected 4 tidemark set lines, one per change"
# The recommendation's own line follows its snippet: "live:" then the
# command with the recommended bound.
b=$(sed -n 's/^  watermark.max_out_of_orderness: \([0-9a-z]*\) .*/\1/p' "$T/out")
grep -A1 'live:$' "$T/out" | grep -qx "    $SET=$b" ||
    fail "live: no tidemark set line for the recommended $b"
expect_exit "live json" 0 "$TM" analyze "$T/drift.jsonl" --ts-field ts \
    --window tumbling:1s --json
expect_in "live json" "$T/out" '"calm_ms": 1, "busy_ms": 3100, "worth_it": true'
expect_in "live json" "$T/out" "\"set_command\": \"$SET=$b\""
if command -v python3 >/dev/null 2>&1; then
    python3 -m json.tool <"$T/out" >/dev/null || fail "live json: not valid JSON"
fi
# With --job: the job's source name.
printf '%s\n' "sources:" "  clicks:" "    path: $T/drift.jsonl" \
    "    schema: {ts: int64, k: string}" "    timestamp: {field: ts}" \
    "    watermark: {strategy: bounded, max_out_of_orderness: 1s}" \
    "sinks:" "  out: {type: file, path: $T/o.jsonl}" >"$T/live.yaml"
expect_exit "live job" 0 "$TM" analyze --job "$T/live.yaml" --sample 0
expect_in "live job" "$T/out" \
    "    at 2026-01-01T03:00:00Z  tidemark set http://HOST:PORT sources.clicks.watermark.max_out_of_orderness=200ms"
# Steady disorder: 1.5s every hour - one static bound.
drift "1500 1500 1500 1500" >"$T/steady.jsonl"
expect_exit "steady" 0 "$TM" analyze "$T/steady.jsonl" --ts-field ts \
    --sample 0
expect_in "steady" "$T/out" "live_bound: one static bound suffices"
if grep -q "^    at 2026" "$T/out"; then
    fail "steady: tidemark set lines per hour"
fi

# ---- The plot marks the recommendation and the maximum ----
expect_exit "plot marks" 0 "$TM" analyze "$T/target.jsonl" --ts-field ts \
    --window tumbling:1s --plot "$T/t.svg"
expect_in "plot marks" "$T/t.svg" ">recommended B=14s L=6s, max delay "
expect_in "plot marks" "$T/t.svg" ">bound 14s<"
expect_in "plot marks" "$T/t.svg" ">max 20s<"
expect_in "plot marks" "$T/t.svg" 'class="xtick"'

echo "analyze: all checks passed"
