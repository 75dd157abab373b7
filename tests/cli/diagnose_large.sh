#!/bin/sh
# diagnose_large.sh - `tidemark diagnose` reading a response larger than
# its first buffer from a scripted server (tests/cli/tcp_peer.c): the
# headers come in the first read and the body in many more, so the
# response buffer is reallocated after the end of the headers was found.
# The client must read the whole body (Content-Length) and parse it:
# here /jobs answers a 200 KiB JSON object with no job in it, and
# diagnose says so and exits 1.  (The client once kept a pointer to the
# end of the headers across that reallocation; it happened to work, so
# this test passed before that fix too: it guards large responses, and
# the fix keeps an offset instead.)
# Usage: diagnose_large.sh TIDEMARK SOURCE_DIR TCP_PEER
. "$(dirname "$0")/lib.sh"
PEER=$3
setup "$1" "$2"

peer=
cleanup() {
    if [ -n "$peer" ]; then
        kill "$peer" 2>/dev/null || true
        wait "$peer" 2>/dev/null || true
    fi
    rm -rf "$T"
}
trap cleanup EXIT

# The body: {"jobs":[],"pad":"xxx..."}, 50 lines of 4,000 pad bytes.
pad=$(printf '%4000s' '' | tr ' ' x)
n=50
len=$((${#pad} * n + 20))
{
    echo ready
    echo accept
    echo request
    printf 'send HTTP/1.1 200 OK\\r\\nContent-Type: application/json\\r\\n'
    printf 'Content-Length: %d\\r\\n\\r\\n\n' "$len"
    echo 'send {"jobs":[],"pad":"'
    i=0
    while [ "$i" -lt "$n" ]; do
        echo "send $pad"
        i=$((i + 1))
    done
    echo 'send "}'
    echo close
} >"$T/script"
"$PEER" "$T/script" >"$T/port" 2>"$T/peer.err" &
peer=$!
tries=0
until [ -s "$T/port" ]; do
    tries=$((tries + 1))
    [ "$tries" -le 2000 ] || fail "the peer printed no port"
    sleep 0.05
done
port=$(cat "$T/port")
expect_exit "large response" 1 "$TM" diagnose "http://127.0.0.1:$port"
expect_in "large response" "$T/err" "the server has 0 jobs"
wait "$peer" || fail "the peer failed: $(cat "$T/peer.err")"
peer=
echo "diagnose_large: ok"
