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
expect_in "exp" "$T/out" "Recommendations"
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

echo "analyze: all checks passed"
