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

# flat FILE: the file's words on one line (the text output of diagnose
# is wrapped at 78 columns), so sentences can be searched for whole.
flat() {
    tr '\n' ' ' <"$1" | tr -s ' '
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

# ---- A job fed through a FIFO on a test clock ----
# For scripts that set TDM_TEST_CLOCK_FILE=$T/clock, JOB (a file of
# tests/cli/jobs/) and HTTP_GET (tests/cli/http_get.c), and keep the
# job's pid in $pid (stuck.sh, live.sh; diagnose.sh uses the cleanup).

# fifo_cleanup: the EXIT trap (trap fifo_cleanup EXIT): closes the FIFO
# (descriptor 3), stops the processes in $pid and $peer (a helper such
# as tcp_peer), removes $T.
pid=
peer=
fifo_cleanup() {
    exec 3>&- 2>/dev/null || true
    for p in $pid $peer; do
        kill "$p" 2>/dev/null || true
        wait "$p" 2>/dev/null || true
    done
    rm -rf "$T"
}

# port_of: the port of $url (set by start).
port_of() {
    echo "$url" | sed 's/.*:\([0-9][0-9]*\).*/\1/'
}

# views_row VIEWS START END: a result row of the views jobs (live.yaml,
# fallback.yaml) for user u; views_rows NAME: the rows of run NAME without
# the fields beyond these, in $T/NAME.rows.
views_row() {
    printf '{"user":"u","views":%s,"window_start":%s,"window_end":%s}\n' "$@"
}
views_rows() {
    sed 's/,"window_end":\([0-9]*\).*/,"window_end":\1}/' "$T/$1.out" >"$T/$1.rows"
}

# clock_ms MS: the job's processing time from now on (written whole).
clock_ms() {
    echo "$1" >"$T/clock.tmp"
    mv "$T/clock.tmp" "$T/clock"
}

# start NAME [ARGS...]: runs the job tests/cli/jobs/$JOB.yaml on a FIFO
# (descriptor 3) with a server; sets url and pid.  Outputs in
# $T/NAME.out, $T/NAME.err.
start() {
    name=$1
    shift
    rm -f "$T/in"
    mkfifo "$T/in"
    "$TM" run "tests/cli/jobs/$JOB.yaml" --http 127.0.0.1:0 -q "$@" \
        >"$T/$name.out" 2>"$T/$name.err" <"$T/in" &
    pid=$!
    exec 3>"$T/in"
    url=$(serving_url "$JOB" "$T/$name.err") || exit 1
}

# finish NAME: end of input; the job must exit 0.
finish() {
    exec 3>&-
    set +e
    wait "$pid"
    rc=$?
    set -e
    pid=
    [ "$rc" = 0 ] || fail "$1: tidemark run exited with $rc: $(cat "$T/$1.err")"
}

# seen NAME N [K]: polls until K vertices (2: the source and the window)
# have taken N records (GET /jobs/JOB, through $HTTP_GET).
seen() {
    port=$(port_of)
    tries=0
    until [ "$("$HTTP_GET" "$port" "/jobs/$JOB" 2>/dev/null |
        grep -o "\"numRecordsIn\":$2[,}]" | wc -l)" -ge "${3:-2}" ]; do
        tries=$((tries + 1))
        [ "$tries" -le 1200 ] || { "$HTTP_GET" "$port" "/jobs/$JOB" | head -c 3000 >&2; cat "$T/$1.err" "$T"/peer.err >&2 2>/dev/null; fail "$1: the job never took $2 records"; }
        sleep 0.05
    done
}

