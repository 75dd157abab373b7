# lib.sh - helpers shared by the end-to-end tests of the tidemark command
# (sourced, not run).  A test script calls `setup "$@"` with the tidemark
# binary and the source folder; it then runs in the source folder (job
# files name their data relative to it) with a private temporary folder
# $T for outputs, removed at exit.  Outputs are compared as sorted
# multisets with expected files written by hand (see tests/cli/expected/).

set -eu
LC_ALL=C
export LC_ALL
TAB=$(printf '\t')

# setup TIDEMARK SOURCE_DIR: checks the arguments, enters the source folder
# and makes $T.
setup() {
    if [ $# -lt 2 ]; then
        echo "usage: $0 TIDEMARK SOURCE_DIR" >&2
        exit 2
    fi
    TM=$1
    SRC=$2
    cd "$SRC"
    T=$(mktemp -d)
    trap 'rm -rf "$T"' EXIT
    EXP=tests/cli/expected
}

fail() {
    echo "FAIL: $*" >&2
    exit 1
}

# same_multiset WHAT EXPECTED ACTUAL: the two files hold the same lines, in
# any order (a missing ACTUAL counts as empty).
same_multiset() {
    sort "$2" >"$T/expected.sorted"
    if [ -f "$3" ]; then
        sort "$3" >"$T/actual.sorted"
    else
        : >"$T/actual.sorted"
    fi
    if ! diff -u "$T/expected.sorted" "$T/actual.sorted" >&2; then
        fail "$1: the lines differ from $2 (compared as sorted multisets)"
    fi
}

# check_dead WHAT EXPECTED_TSV ACTUAL_JSONL: every dead letter (JSON lines
# {"location", "reason", "raw"}) matches one line "location<TAB>part of
# the reason<TAB>raw as JSON-escaped text" of EXPECTED_TSV and vice versa:
# same locations and raw texts as multisets, and each reason contains the
# expected part (reasons are the parser's prose; the part pins what they
# must name, such as the field).
check_dead() {
    if [ -f "$3" ]; then
        re='^\{"location":"([^"]*)","reason":"(.*)","raw":"(.*)"\}$'
        sed -E "s/$re/\\1\\t\\2\\t\\3/" "$3" >"$T/dead.tsv"
    else
        : >"$T/dead.tsv"
    fi
    if grep -v "$TAB" "$T/dead.tsv" >&2; then
        fail "$1: dead letters not of the form {location, reason, raw}"
    fi
    cut -f1,3 "$2" >"$T/dead.expected"
    cut -f1,3 "$T/dead.tsv" >"$T/dead.actual"
    same_multiset "$1 (location and raw text)" "$T/dead.expected" \
        "$T/dead.actual"
    while IFS="$TAB" read -r loc part raw; do
        reason=$(awk -F "$TAB" -v l="$loc" '$1 == l { print $2; exit }' \
            "$T/dead.tsv")
        case "$reason" in
        *"$part"*) ;;
        *) fail "$1: the reason at $loc, \"$reason\", does not say \"$part\"" ;;
        esac
    done <"$2"
}

# serving_url JOB ERR: polls ERR, the standard error of a `tidemark run
# --http` started in the background, for the "serving" line of job JOB,
# and prints its URL (fails after 2,000 tries 50 ms apart).  Use as
# url=$(serving_url JOB ERR) || exit 1.
serving_url() {
    tries=0
    u=
    while [ -z "$u" ]; do
        tries=$((tries + 1))
        [ "$tries" -le 2000 ] || fail "no \"serving\" line from tidemark run"
        u=$(sed -n "s/^tidemark: serving \(http:[^ ]*\) (job \"$1\")\$/\1/p" \
            "$2" 2>/dev/null || true)
        [ -n "$u" ] || sleep 0.05
    done
    echo "$u"
}

# expect_in WHAT FILE TEXT: FILE contains TEXT (a fixed string).
expect_in() {
    if ! grep -q -F -- "$3" "$2"; then
        echo "--- $2:" >&2
        cat "$2" >&2
        fail "$1: expected to find: $3"
    fi
}

# expect_exit WHAT CODE COMMAND...: runs COMMAND (stdout to $T/out, stderr
# to $T/err) and checks its exit code.
expect_exit() {
    what=$1
    want=$2
    shift 2
    set +e
    "$@" >"$T/out" 2>"$T/err"
    got=$?
    set -e
    if [ "$got" != "$want" ]; then
        echo "--- stdout:" >&2
        cat "$T/out" >&2
        echo "--- stderr:" >&2
        cat "$T/err" >&2
        fail "$what: exit code $got, expected $want"
    fi
}
