#!/bin/sh
# yaml_errors.sh - broken job files and overrides: `tidemark validate` and
# `tidemark run` exit 3 (1 for an unreadable file, 2 for a bad command
# line) and name the file, line and column of the offending key or value,
# the key path, and what was expected.  The line:column numbers below are
# read off the job texts written here (1-based).
# Usage: yaml_errors.sh TIDEMARK SOURCE_DIR
. "$(dirname "$0")/lib.sh"
setup "$@"

# A valid job to start from (lines numbered in the comments of the cases).
cat >"$T/good.yaml" <<'EOF'
name: t
sources:
  clicks:
    path: tests/cli/data/refire.jsonl
    schema: {k: string, v: int64, ts: int64}
    timestamp: {field: ts}
windows:
  w:
    from: clicks
    key_by: k
    window: {type: tumbling, size: 10s}
    sink: out
sinks:
  out: {type: stdout}
EOF

# at FILE LINE TEXT: "FILE:LINE:COLUMN" where COLUMN is where TEXT first
# starts on that line (1-based), counted here so that the expectations
# below do not depend on the program.
at() {
    col=$(sed -n "${2}p" "$1" | awk -v t="$3" '{ print index($0, t) }')
    printf '%s:%s:%s' "$1" "$2" "$col"
}

# bad CASE CODE TEXT...: validates $T/CASE.yaml, expects exit CODE and
# every TEXT (fixed strings) on stderr.
bad() {
    case_name=$1
    code=$2
    shift 2
    expect_exit "$case_name" "$code" "$TM" validate "$T/$case_name.yaml"
    for text in "$@"; do
        expect_in "$case_name" "$T/err" "$text"
    done
}

expect_exit "valid job" 0 "$TM" validate "$T/good.yaml"
expect_in "valid job" "$T/out" "good.yaml: OK (1 source, 1 window, 0 joins, 1 sink)"

# YAML syntax: the flow map on line 5 is never closed.
sed '5s/}$//' "$T/good.yaml" >"$T/syntax.yaml"
bad syntax 3 "$T/syntax.yaml:6:" "YAML syntax error"

# An unknown key, close to a known one ("feld" on line 6).
sed '6s/field/feld/' "$T/good.yaml" >"$T/typo.yaml"
bad typo 3 \
    "$(at "$T/typo.yaml" 6 feld): sources.clicks.timestamp.feld: unknown source key (did you mean \"timestamp.field\"?)"

# A misspelt section (line 13): suggested, and the sinks are then missing.
sed '13s/sinks:/sink:/' "$T/good.yaml" >"$T/section.yaml"
bad section 3 \
    "$T/section.yaml:13:1: sink: unknown job key (did you mean \"sinks\"?)"

# An unknown key far from every known one.
printf 'colour: blue\n' >>"$T/good.yaml.tmp"
cat "$T/good.yaml" "$T/good.yaml.tmp" >"$T/unknown.yaml"
bad unknown 3 "$T/unknown.yaml:15:1: colour: unknown job key; \`tidemark config list\` shows the known keys"

# A bad duration: at the value "5 parsecs" on line 11.
sed '11s/10s/5 parsecs/' "$T/good.yaml" >"$T/duration.yaml"
bad duration 3 \
    "$(at "$T/duration.yaml" 11 "5 parsecs"): windows.w.window.size: expected a duration like \"5s\""

# A bad choice: at the value "tumbelling" on line 11.
sed '11s/tumbling/tumbelling/' "$T/good.yaml" >"$T/enum.yaml"
bad enum 3 \
    "$(at "$T/enum.yaml" 11 tumbelling): windows.w.window.type: expected one of" \
    'got "tumbelling"'

# The same key twice, once nested and once dotted (line 12).
sed '12s/.*/    window.size: 5s\n    sink: out/' "$T/good.yaml" >"$T/twice.yaml"
bad twice 3 "$T/twice.yaml:12:5: windows.w.window.size: given twice (first at line 11, column $(at "$T/good.yaml" 11 size | cut -d: -f3))"

# A node name used twice across sections: the sink "w" (line 15).
cat "$T/good.yaml" >"$T/dupname.yaml"
printf '  w: {type: stdout}\n' >>"$T/dupname.yaml"
bad dupname 3 "$T/dupname.yaml:15:3: sinks.w: the name \"w\" is already used by the window at line 8"

# Graph checks by the library, placed at the key they name: key_by names
# a field that is not in the schema (at the value on line 10).
sed '10s/key_by: k/key_by: kk/' "$T/good.yaml" >"$T/field.yaml"
bad field 3 "$(at "$T/field.yaml" 10 kk): windows.w.key_by:" '"kk"'

# ... a sink that does not exist (line 12) ...
sed '12s/sink: out/sink: nowhere/' "$T/good.yaml" >"$T/ref.yaml"
bad ref 3 "$(at "$T/ref.yaml" 12 nowhere): windows.w.sink:" '"nowhere"'

# ... and a required key that is not there: at the node's name (line 8).
sed '11d' "$T/good.yaml" >"$T/required.yaml"
bad required 3 "$T/required.yaml:8:3: windows.w.window.size: required"

# Shapes: an empty file, a list instead of a map, a list where one value
# is expected, an aggregate with a misspelt key, a schema entry that is a
# list.
: >"$T/empty.yaml"
bad empty 3 "$T/empty.yaml:1:1: the job file is empty"
printf -- '- a\n- b\n' >"$T/list.yaml"
bad list 3 "$T/list.yaml:1:1: expected a map of job keys"
sed '12s/sink: out/sink: [out, out]/' "$T/good.yaml" >"$T/shape.yaml"
bad shape 3 "$(at "$T/shape.yaml" 12 "[out"): windows.w.sink: expected a single value, got a list"
sed '12s/.*/    aggregates: [{fn: sum, feild: v}]\n    sink: out/' \
    "$T/good.yaml" >"$T/agg.yaml"
bad agg 3 "$(at "$T/agg.yaml" 12 feild): windows.w.aggregates: unknown aggregate key \"feild\" (did you mean \"field\"?)"
sed '5s/v: int64/v: [int64]/' "$T/good.yaml" >"$T/schema.yaml"
bad schema 3 "$(at "$T/schema.yaml" 5 "[int64]"): sources.clicks.schema: expected a field name and a type"

# Bytes that are not UTF-8 (line 2, column 1), a tab in the indentation,
# and a second YAML document (line 4, after "---").
printf 'name: a\n\377\376\n' >"$T/binary.yaml"
bad binary 3 "$T/binary.yaml:2:1: YAML syntax error" "(byte 0xff)"
printf 'name: a\n\tparallelism: 2\n' >"$T/tab.yaml"
bad tab 3 "$T/tab.yaml:2:1: YAML syntax error" "tab character"
printf -- '---\nname: a\n---\nname: b\n' >"$T/two.yaml"
bad two 3 "$T/two.yaml:4:1: a job file holds one YAML document"

# Several errors are all reported, sorted by position, with a count.
sed -e '6s/field/feld/' -e '11s/10s/5 parsecs/' -e '13s/sinks:/sink:/' \
    "$T/good.yaml" >"$T/several.yaml"
bad several 3 "several.yaml: invalid job (3 errors)"
grep -o '^[^ ]*several.yaml:[0-9][0-9]*' "$T/err" | cut -d: -f2 >"$T/lines"
printf '6\n11\n13\n' >"$T/lines.expected"
if ! diff -u "$T/lines.expected" "$T/lines" >&2; then
    fail "several: errors not reported in file order"
fi

# `run` refuses an invalid job the same way, before reading any input.
expect_exit "run invalid" 3 "$TM" run "$T/duration.yaml"
expect_in "run invalid" "$T/err" "$(at "$T/duration.yaml" 11 "5 parsecs"): windows.w.window.size"
expect_in "run invalid" "$T/err" "invalid job (1 error), not run"

# Overrides: unknown node, unknown key (with a suggestion), bad value,
# and a missing '=' (a usage error).
expect_exit "--set node" 3 "$TM" validate "$T/good.yaml" \
    --set windows.nope.allowed_lateness=1m
expect_in "--set node" "$T/err" "--set windows.nope.allowed_lateness: $T/good.yaml has no window named \"nope\""
expect_exit "--set key" 3 "$TM" validate "$T/good.yaml" \
    --set windows.w.alowed_lateness=1m
expect_in "--set key" "$T/err" "--set windows.w.alowed_lateness: unknown window key (did you mean \"allowed_lateness\"?)"
expect_exit "--set value" 3 "$TM" validate "$T/good.yaml" \
    --set parallelism=0
expect_in "--set value" "$T/err" "--set parallelism: expected an integer from 1 to 256"
expect_exit "--parallelism value" 3 "$TM" validate "$T/good.yaml" -p x
expect_in "--parallelism value" "$T/err" '--set parallelism: expected an integer, got "x"'
expect_exit "--set without =" 2 "$TM" validate "$T/good.yaml" --set parallelism
expect_in "--set without =" "$T/err" "expected key=value"
expect_exit "--set ok" 0 "$TM" validate "$T/good.yaml" \
    --set windows.w.allowed_lateness=1m --set sinks.out.format=csv

# A job file that cannot be read is a runtime failure (1).
expect_exit "missing file" 1 "$TM" validate "$T/nope.yaml"
expect_in "missing file" "$T/err" "$T/nope.yaml: cannot read the job file"
