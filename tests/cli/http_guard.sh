#!/bin/sh
# http_guard.sh - what `tidemark run --http` guards against (issue 18,
# defect 7), end to end: the bearer token from a file or the environment
# (the command line shows it in `ps`), their precedence and errors; the
# Host check against DNS rebinding (403) and http.allowed_hosts; the
# loud warning of a server other machines can reach without a token.
# The header deadline and the per-client limit are tested through the
# library (tests/unit/test_server.c: slow_clients_do_not_lock_others_out,
# one_client_gets_at_most_64_connections).
#
# Only loopback is ever bound: the public-bind warning is checked with
# 0.0.0.0:PORT where PORT is held by a server of ours on 127.0.0.1, so
# that bind fails (exit 1) after the warning.  The job is
# tests/cli/jobs/stdin.yaml reading a FIFO kept open on fd 3.
# Usage: http_guard.sh TIDEMARK SOURCE_DIR HTTP_GET
. "$(dirname "$0")/lib.sh"
setup "$@"
HG=$3
. "$(dirname "$0")/http_lib.sh"
unset TIDEMARK_HTTP_TOKEN

# no_warning WHAT FILE: FILE has no public-bind warning.
no_warning() {
    if grep -q WARNING "$2"; then
        cat "$2" >&2
        fail "$1: unexpected warning"
    fi
}

# ---- Loopback without a token: no warning; the Host check ----
serve open --http 127.0.0.1:0
no_warning "loopback" "$T/open.err"
get "rebinding page" 3 /jobs/stdin/late -H "evil.example:$PORT"
expect_in "rebinding page" "$T/body.err" 'HTTP 403'
expect_in "rebinding page" "$T/body" '"error":"this server does not answer that Host header (add the name to the job key http.allowed_hosts)"'
get "rebinding, the page" 3 / -H "evil.example:$PORT"
expect_in "rebinding, the page" "$T/body.err" 'HTTP 403'
get "the address" 0 /jobs/stdin/late
expect_in "the address" "$T/body" '"counts":{"dropped":0'
get "localhost" 0 /jobs/stdin/late -H "localhost:$PORT"
get "another port" 0 /jobs -H "127.0.0.1:1"

# ---- The public-bind warning ----
# 0.0.0.0:PORT while our server holds 127.0.0.1:PORT: it cannot bind.
HELD=$PORT
expect_exit "public bind" 1 "$TM" run tests/cli/jobs/stdin.yaml \
    --http "0.0.0.0:$HELD" </dev/null
expect_in "public bind" "$T/err" "tidemark: WARNING: --http 0.0.0.0:$HELD can be reached from other machines and no token is set:"
expect_in "public bind" "$T/err" "tidemark: WARNING: set a token (--http-token-file FILE or TIDEMARK_HTTP_TOKEN) or listen on 127.0.0.1."
expect_in "public bind" "$T/err" "cannot listen on 0.0.0.0:$HELD"
expect_exit "public bind, token" 1 env TIDEMARK_HTTP_TOKEN=t "$TM" run \
    tests/cli/jobs/stdin.yaml --http "0.0.0.0:$HELD" </dev/null
no_warning "public bind, token" "$T/err"
expect_exit "localhost bind" 1 "$TM" run tests/cli/jobs/stdin.yaml \
    --http "localhost:$HELD" </dev/null
no_warning "localhost bind" "$T/err"
finish "open"

# ---- http.allowed_hosts ----
serve allow --http 127.0.0.1:0 \
    --set 'http.allowed_hosts=tidemark.example, b.example'
get "allowed name" 0 /jobs -H "TideMark.example:8081"
get "other name" 3 /jobs -H "other.example:$PORT"
expect_in "other name" "$T/body.err" 'HTTP 403'
finish "allow"

# ---- The token from a file: not in `ps` ----
printf 's3cret\n' >"$T/token"
serve file --http 127.0.0.1:0 --http-token-file "$T/token"
get "file, no token" 3 /jobs
expect_in "file, no token" "$T/body.err" 'HTTP 401'
get "file, token" 0 /jobs -t s3cret
if [ -r "/proc/$PID/cmdline" ] && tr '\0' ' ' <"/proc/$PID/cmdline" |
    grep -q s3cret; then
    fail "file: the token is on the command line"
fi
finish "file"

# ---- From the environment; a file goes first ----
export TIDEMARK_HTTP_TOKEN=envtok
serve env --http 127.0.0.1:0
get "env, no token" 3 /jobs
expect_in "env, no token" "$T/body.err" 'HTTP 401'
get "env, token" 0 /jobs -t envtok
finish "env"
serve both --http 127.0.0.1:0 --http-token-file "$T/token"
get "file over env" 0 /jobs -t s3cret
get "env token loses" 3 /jobs -t envtok
finish "both"
unset TIDEMARK_HTTP_TOKEN

# ---- Refused tokens ----
expect_exit "missing file" 2 "$TM" run tests/cli/jobs/stdin.yaml \
    --http 127.0.0.1:0 --http-token-file "$T/nope" </dev/null
expect_in "missing file" "$T/err" "tidemark run: --http-token-file $T/nope: cannot read it: No such file or directory"
printf '\n' >"$T/empty"
expect_exit "empty file" 2 "$TM" run tests/cli/jobs/stdin.yaml \
    --http 127.0.0.1:0 --http-token-file "$T/empty" </dev/null
expect_in "empty file" "$T/err" "tidemark run: --http-token-file $T/empty: the file holds no token"
printf 'two words\n' >"$T/spaced"
expect_exit "spaced token" 2 "$TM" run tests/cli/jobs/stdin.yaml \
    --http 127.0.0.1:0 --http-token-file "$T/spaced" </dev/null
expect_in "spaced token" "$T/err" "tidemark run: --http-token-file: bearer token: byte 4 is a space"
expect_exit "empty env" 2 env TIDEMARK_HTTP_TOKEN= "$TM" run \
    tests/cli/jobs/stdin.yaml --http 127.0.0.1:0 </dev/null
expect_in "empty env" "$T/err" "tidemark run: TIDEMARK_HTTP_TOKEN is set but empty"
expect_exit "two tokens" 2 "$TM" run tests/cli/jobs/stdin.yaml \
    --http 127.0.0.1:0 --http-token x --http-token-file "$T/token" </dev/null
expect_in "two tokens" "$T/err" "--http-token and --http-token-file both give a token"
expect_exit "file without --http" 2 "$TM" run tests/cli/jobs/stdin.yaml \
    --http-token-file "$T/token" </dev/null
expect_in "file without --http" "$T/err" "--http-token-file needs --http ADDR"
expect_exit "short header timeout" 3 "$TM" run tests/cli/jobs/stdin.yaml \
    --http 127.0.0.1:0 --set http.header_timeout=10ms </dev/null
expect_in "short header timeout" "$T/err" "http.header_timeout"
echo "http_guard.sh: ok"
