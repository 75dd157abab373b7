#!/bin/sh
# SPDX-License-Identifier: MIT
# log_level.sh - `tidemark run --log-level debug`: one grep-friendly line
# per window firing and per watermark advance on stderr, none at the
# default level, and a bad level refused before the job runs.
# Usage: log_level.sh TIDEMARK SOURCE_DIR
. "$(dirname "$0")/lib.sh"
setup "$@"

# clicks10s: 2 CSV files, counts per page in 10 s windows; its expected
# results (tests/cli/expected/clicks10s.results.jsonl) are one row per
# firing, so the debug log has as many fire lines.
expect_exit "run --log-level debug" 0 "$TM" run examples/clicks10s.yaml \
    --quiet --log-level debug
rows=$(wc -l <"$T/out")
fires=$(grep -c '^tidemark: debug fire vertex=clicks_per_page subtask=0 key=' \
    "$T/err" || true)
[ "$rows" -gt 0 ] || fail "no result rows"
[ "$fires" = "$rows" ] || fail "$fires fire lines for $rows results"
expect_in "debug" "$T/err" \
    'debug fire vertex=clicks_per_page subtask=0 key=/home window=[2024-12-02T10:00:00.000Z,2024-12-02T10:00:10.000Z) wm=end pane=on_time records=7 latency_ms=0'
expect_in "debug" "$T/err" 'debug wm vertex=clicks subtask=0 from=none to='
expect_in "debug" "$T/err" 'debug wm vertex=clicks_per_page subtask=0 from=none to='

# --log-level=debug is the same; the job key works as --set too.
expect_exit "run --log-level=debug" 0 "$TM" run examples/clicks10s.yaml \
    --quiet --log-level=debug
grep -q '^tidemark: debug fire ' "$T/err" || fail "--log-level=debug: no fire lines"
expect_exit "run --set log.level=debug" 0 "$TM" run examples/clicks10s.yaml \
    --quiet --set log.level=debug
grep -q '^tidemark: debug fire ' "$T/err" || fail "--set log.level: no fire lines"

# The default is info: no debug line.
expect_exit "run" 0 "$TM" run examples/clicks10s.yaml --quiet
if grep -q 'debug ' "$T/err"; then
    fail "debug lines at the default level"
fi

# A bad level is an invalid job (exit 3), naming the choices; a missing
# value a usage error (exit 2).
expect_exit "--log-level verbose" 3 "$TM" run examples/clicks10s.yaml \
    --log-level verbose
expect_in "--log-level verbose" "$T/err" 'log.level: expected one of info, debug, got "verbose"'
expect_exit "--log-level" 2 "$TM" run examples/clicks10s.yaml --log-level
expect_in "--log-level" "$T/err" '--log-level needs a value'
echo "log_level: OK"
