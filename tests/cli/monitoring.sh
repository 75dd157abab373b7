#!/bin/sh
# monitoring.sh - the shipped monitoring files (monitoring/, docs/monitoring.md)
# against Prometheus' own tools and against the names tidemark exports:
#   - alerts.yml passes `promtool check rules`, and its unit tests
#     (alerts_test.yml: each alert fires past its threshold for its whole
#     `for`, and stays quiet below it) pass `promtool test rules`;
#   - the Grafana dashboard is JSON (read with jansson, tests/cli/dash_exprs.c)
#     whose every query is PromQL that promtool parses (each one becomes a
#     recording rule, with the dashboard's variables filled in);
#   - the docs' example queries (inline code in docs/*.md that calls a
#     function or aggregation over a tidemark_ series) parse the same way;
#   - every tidemark_ series the alerts, the dashboard and the docs'
#     queries name is one that GET /metrics exports (`tidemark config
#     metrics`, plus the two derived series), so a rename cannot leave
#     them reading nothing.
# Usage: monitoring.sh TIDEMARK SOURCE_DIR DASH_EXPRS
. "$(dirname "$0")/lib.sh"
setup "$@"
DX=$3
M=monitoring
command -v promtool >/dev/null 2>&1 ||
    fail "promtool is not installed (Debian package prometheus; scripts/deps.sh)"

promtool check rules "$M/alerts.yml" >"$T/check" 2>&1 ||
    fail "promtool check rules: $(cat "$T/check")"
(cd "$M" && promtool test rules alerts_test.yml) >"$T/test" 2>&1 ||
    fail "promtool test rules: $(cat "$T/test")"

"$DX" "$M/grafana-dashboard.json" >"$T/exprs" 2>"$T/dx.err" ||
    fail "the dashboard: $(cat "$T/dx.err")"
[ -s "$T/exprs" ] || fail "the dashboard has no query"
{
    echo "groups:"
    echo "  - name: dashboard"
    echo "    rules:"
    n=0
    sed -e 's/\$__rate_interval/5m/g' -e 's/\$job/.*/g' "$T/exprs" |
        while IFS= read -r e; do
            n=$((n + 1))
            printf '      - record: tidemark:dashboard_query_%d\n' "$n"
            printf "        expr: '%s'\n" "$(printf '%s' "$e" | sed "s/'/''/g")"
        done
} >"$T/dash_rules.yml"
promtool check rules "$T/dash_rules.yml" >"$T/dcheck" 2>&1 ||
    fail "a dashboard query is not PromQL: $(cat "$T/dcheck")"
expect_in "dashboard queries" "$T/dcheck" \
    "SUCCESS: $(wc -l <"$T/exprs" | tr -d ' ') rules found"

# The docs' queries: `...tidemark_...` spans with a "(" that do not start
# with a series name (those are label lists such as name{job_name,...}).
grep -o -h '`[^`]*tidemark_[^`]*`' docs/*.md | tr -d '`' |
    awk '/\(/ && !/^tidemark_/' >"$T/doc_exprs"
[ "$(wc -l <"$T/doc_exprs")" -ge 4 ] ||
    fail "the docs' example queries were not found: $(cat "$T/doc_exprs")"
{
    echo "groups:"
    echo "  - name: docs"
    echo "    rules:"
    n=0
    while IFS= read -r e; do
        n=$((n + 1))
        printf '      - record: tidemark:docs_query_%d\n' "$n"
        printf "        expr: '%s'\n" "$(printf '%s' "$e" | sed "s/'/''/g")"
    done <"$T/doc_exprs"
} >"$T/doc_rules.yml"
promtool check rules "$T/doc_rules.yml" >"$T/docheck" 2>&1 ||
    fail "a query of the docs is not PromQL: $(cat "$T/docheck")"
expect_in "docs queries" "$T/docheck" \
    "SUCCESS: $(wc -l <"$T/doc_exprs" | tr -d ' ') rules found"

"$TM" config metrics >"$T/metrics" 2>&1 || fail "tidemark config metrics"
awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^tidemark_/) print $i }' \
    "$T/metrics" >"$T/exported"
printf '%s\n' tidemark_watermark_held_back_seconds \
    tidemark_partition_series_omitted >>"$T/exported"
cat "$M/alerts.yml" "$T/exprs" "$T/doc_exprs" |
    grep -o 'tidemark_[a-z0-9_]*' | sort -u \
    >"$T/named"
missing=$(grep -v -x -F -f "$T/exported" "$T/named" || true)
[ -z "$missing" ] || fail "named but not exported: $missing"
echo "monitoring.sh: ok ($(wc -l <"$T/named" | tr -d ' ') series named," \
    "$(wc -l <"$T/exprs" | tr -d ' ') dashboard queries," \
    "$(wc -l <"$T/doc_exprs" | tr -d ' ') queries of the docs)"
