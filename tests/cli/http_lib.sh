# http_lib.sh - helpers of the end-to-end tests of `tidemark run --http`
# (http.sh, http_guard.sh; sourced after lib.sh, with $HG the http_get
# client, $T the temporary folder and $PORT the server's port).  Every
# wait polls a condition a bounded number of times.

# wait_for WHAT FILE TEXT: polls FILE (up to ~100 s: a bound for a hang,
# sized for a loaded machine) until it holds TEXT.
wait_for() {
    n=0
    until grep -q -F -- "$3" "$2" 2>/dev/null; do
        n=$((n + 1))
        if [ $n -gt 2000 ]; then
            cat "$2" >&2 || true
            fail "$1: \"$3\" never appeared in $2"
        fi
        sleep 0.05
    done
}

# poll WHAT TARGET TEXT [TOKEN]: GETs TARGET until the body holds TEXT.
poll() {
    n=0
    while :; do
        if [ -n "${4-}" ]; then
            "$HG" -t "$4" "$PORT" "$2" >"$T/poll" 2>/dev/null || true
        else
            "$HG" "$PORT" "$2" >"$T/poll" 2>/dev/null || true
        fi
        grep -q -F -- "$3" "$T/poll" && return 0
        n=$((n + 1))
        if [ $n -gt 2000 ]; then
            cat "$T/poll" >&2
            fail "$1: GET $2 never returned $3"
        fi
        sleep 0.05
    done
}

# get WHAT WANT_EXIT TARGET [http_get options]: one request into
# $T/body, checking http_get's exit status (0: 2xx, 3: other status).
get() {
    what=$1
    want=$2
    target=$3
    shift 3
    set +e
    "$HG" "$@" "$PORT" "$target" >"$T/body" 2>"$T/body.err"
    got=$?
    set -e
    if [ "$got" != "$want" ]; then
        cat "$T/body" "$T/body.err" >&2
        fail "$what: http_get exited $got, expected $want"
    fi
}

# serve NAME [run options]: starts `tidemark run` of
# tests/cli/jobs/stdin.yaml with the options, reading the FIFO $T/NAME.in
# (kept open on fd 3), stdout in $T/NAME.out, stderr in $T/NAME.err;
# sets PID and PORT once the server line is there.
serve() {
    name=$1
    shift
    mkfifo "$T/$name.in"
    "$TM" run tests/cli/jobs/stdin.yaml -q "$@" <"$T/$name.in" \
        >"$T/$name.out" 2>"$T/$name.err" &
    PID=$!
    exec 3>"$T/$name.in"
    wait_for "$name: server line" "$T/$name.err" 'tidemark: serving http://'
    PORT=$(sed -n 's|^tidemark: serving http://.*:\([0-9]*\)/ .*|\1|p' \
        "$T/$name.err")
    [ -n "$PORT" ] || fail "$name: no port in: $(cat "$T/$name.err")"
}

# finish WHAT: closes fd 3, the job's input; the job must exit 0.
finish() {
    exec 3>&-
    set +e
    wait $PID
    rc=$?
    set -e
    [ "$rc" = 0 ] || fail "$1: exit code $rc, expected 0"
}
