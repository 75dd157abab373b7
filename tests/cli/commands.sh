#!/bin/sh
# commands.sh - the command line itself: --version, --help and `help run`
# (with examples and the exit codes), `config list` in both forms,
# `validate` on every example, and the usage errors (exit 2).
# Usage: commands.sh TIDEMARK SOURCE_DIR
. "$(dirname "$0")/lib.sh"
setup "$@"

expect_exit "--version" 0 "$TM" --version
expect_in "--version" "$T/out" "tidemark 0.1.0"

# --help: the commands, the exit codes, examples.
expect_exit "--help" 0 "$TM" --help
for text in "run JOB.yaml" "validate JOB.yaml" "config list" \
    "0  success" "1  runtime failure" "2  usage error" "3  invalid job" \
    "Examples:" "tidemark run examples/clicks10s.yaml"; do
    expect_in "--help" "$T/out" "$text"
done

# help run: options, exit codes and examples; run --help is the same.
expect_exit "help run" 0 "$TM" help run
for text in "--set KEY=VALUE" "--parallelism N" "--quiet" "SIGINT" \
    "Exit codes: 0 success" "Examples:" \
    "--set sources.clicks.watermark.idle_timeout=0"; do
    expect_in "help run" "$T/out" "$text"
done
cp "$T/out" "$T/help_run"
expect_exit "run --help" 0 "$TM" run --help
if ! cmp -s "$T/out" "$T/help_run"; then
    fail "run --help differs from help run"
fi
expect_exit "help validate" 0 "$TM" help validate
expect_in "help validate" "$T/out" "usage: tidemark validate"
expect_exit "help config" 0 "$TM" help config
expect_in "help config" "$T/out" "usage: tidemark config list"

# config list: every scope, each key with its default; --markdown gives
# tables; a scope limits the list.
expect_exit "config list" 0 "$TM" config list
for text in "Job keys:" "Source keys:" "Window keys:" "Join keys:" \
    "Sink keys:" "parallelism = 1" "watermark.idle_timeout = 0" \
    "allowed_lateness = 0"; do
    expect_in "config list" "$T/out" "$text"
done
expect_exit "config list --markdown" 0 "$TM" config list --markdown
expect_in "config list --markdown" "$T/out" \
    "| key | type | default | description |"
expect_in "config list --markdown" "$T/out" \
    '| `output_mode` | one of `append`, `upsert`, `retract` | `append` |'
expect_exit "config list window" 0 "$TM" config list window
expect_in "config list window" "$T/out" "Window keys:"
if grep -q "Source keys:" "$T/out"; then
    fail "config list window printed other scopes"
fi

# Every example is a valid job.
for job in examples/*.yaml; do
    expect_exit "validate $job" 0 "$TM" validate "$job"
    expect_in "validate $job" "$T/out" "$job: OK"
done

# The job shown at the top of docs/job-format.md runs as shown: it is
# examples/uv.yaml without the "views" aggregate, so its results are those
# of uv without that column (tests/cli/expected/uv.md).
awk '/^```yaml/ { f = 1; next } /^```/ { if (f) exit } f' \
    docs/job-format.md >"$T/doc.yaml"
expect_exit "docs/job-format.md example" 0 "$TM" run "$T/doc.yaml" -q \
    --set sinks.results.path="$T/doc.jsonl" \
    --set sinks.late.path="$T/doc-late.jsonl"
sed 's/,"views":[0-9]*//' "$EXP/uv.results.jsonl" >"$T/doc.expected"
same_multiset "docs/job-format.md example" "$T/doc.expected" "$T/doc.jsonl"
same_multiset "docs/job-format.md example, late" "$EXP/uv.late.jsonl" \
    "$T/doc-late.jsonl"

# stderr is not a terminal here: no status line (no carriage return, no
# escape sequence) even without --quiet, only the summary.
expect_exit "run without a terminal" 0 "$TM" run examples/clicks10s.yaml \
    --set status.interval=1ms
if grep -q "$(printf '\r')" "$T/err" || grep -q "$(printf '\033')" "$T/err"
then
    fail "status line written although stderr is not a terminal"
fi
expect_in "run without a terminal" "$T/err" 'job "clicks10s" finished after'

# An input that cannot be opened is a runtime failure (1), named.
expect_exit "missing input" 1 "$TM" run examples/clicks10s.yaml -q \
    --set sources.clicks.path="$T/nothing.csv"
expect_in "missing input" "$T/err" "$T/nothing.csv"
expect_in "missing input" "$T/err" 'job "clicks10s" failed after'

# Usage errors: exit 2 with a message on stderr.
expect_exit "no command" 2 "$TM"
expect_exit "unknown command" 2 "$TM" frobnicate
expect_in "unknown command" "$T/err" 'unknown command "frobnicate"'
expect_exit "run without a file" 2 "$TM" run
expect_in "run without a file" "$T/err" "no job file given"
expect_exit "two files" 2 "$TM" validate a.yaml b.yaml
expect_exit "unknown option" 2 "$TM" run examples/uv.yaml --fast
expect_in "unknown option" "$T/err" "unknown option --fast"
expect_exit "--parallelism without value" 2 "$TM" run examples/uv.yaml \
    --parallelism
expect_exit "validate --quiet" 2 "$TM" validate examples/uv.yaml --quiet
expect_exit "help on nothing" 2 "$TM" help frobnicate
expect_exit "config without list" 2 "$TM" config
expect_exit "config list bad scope" 2 "$TM" config list planets
