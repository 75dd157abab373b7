#!/bin/sh
# SPDX-License-Identifier: MIT
# guard.sh - issue 20, "brokers.timeout" (docs/kafka.md, "Operations
# guards"): a Kafka source or sink that cannot reach any of its brokers
# ends the job with an error naming the node and the brokers, and a
# non-zero exit, once the timeout has passed, instead of retrying
# forever:
#   - a source whose brokers are a closed port (never reached);
#   - a sink whose brokers are a closed port (never reached): the job's
#     file input ends at once, so before the guard the run waited for
#     its deliveries until the close gave up (30 s) with another message;
#   - a source that reached the mock cluster, which is then killed
#     (lost after contact).
# The waits are deadlines for a hang (lib.sh scales them), never a
# verdict on speed.
# Usage: guard.sh TIDEMARK SOURCE_DIR MOCK TOOL
. "$(dirname "$0")/lib.sh"
kafka_init "$@"

# A port nobody listens on: bound here, then closed (the kernel does
# not hand it out again at once); 127.0.0.1:1 if python3 is missing.
closed_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()' 2>/dev/null || echo 1
}
DEAD="127.0.0.1:$(closed_port)"

# expect_failed NAME TEXT...: job NAME (LAST_PID) exits non-zero within
# the deadline and its log holds every TEXT.
expect_failed() {
    _n=$1
    shift
    wait_pid "$LAST_PID" 60 && fail "$_n: the job exited 0"
    for _t in "$@"; do
        grep -q -F -- "$_t" "$W/$_n.log" || fail "$_n: no \"$_t\" in its log"
    done
}

printf '{"k":"a","ts":%s}\n' "$T0" >"$W/in.jsonl"

# 1. A source that never reaches a broker.
cat >"$W/src.yaml" <<EOF
name: guard_src
sources:
  ev:
    type: kafka
    brokers: "$DEAD"
    topics: ev
    brokers.timeout: 2s
    schema: {k: string, ts: int64}
    timestamp.field: ts
windows:
  w: {from: ev, key_by: k, window.size: 10s, aggregates: "count() as n",
      sink: out}
sinks:
  out: {type: file, path: $W/src-out.jsonl}
EOF
run_bg src "$W/src.yaml"
expect_failed src "source \"ev\": cannot reach any of its brokers $DEAD" \
    "(brokers.timeout)"
[ "$WAIT_RC" -eq 1 ] || fail "src: exit status $WAIT_RC, expected 1"

# 2. A sink that never reaches a broker.
cat >"$W/sink.yaml" <<EOF
name: guard_sink
sources:
  ev:
    path: $W/in.jsonl
    schema: {k: string, ts: int64}
    timestamp.field: ts
windows:
  w: {from: ev, key_by: k, window.size: 10s, aggregates: "count() as n",
      sink: out}
sinks:
  out:
    type: kafka
    brokers: "$DEAD"
    topic: results
    brokers.timeout: 2s
EOF
run_bg sink "$W/sink.yaml"
expect_failed sink "sink \"out\"" \
    "kafka topic 'results': cannot reach any of its brokers $DEAD" \
    "(brokers.timeout)"
[ "$WAIT_RC" -eq 1 ] || fail "sink: exit status $WAIT_RC, expected 1"

# 3. A source that reached the cluster and then lost it.
start_mock ev:1
produce ev --partition 0 "$W/in.jsonl"
{
    echo "name: guard_lost"
    echo "sources:"
    kafka_source_yaml ev ev g1 "brokers.timeout: 2s" \
        "schema: {k: string, ts: int64}" "timestamp.field: ts"
    cat <<EOF
windows:
  w: {from: ev, key_by: k, window.size: 10s, aggregates: "count() as n",
      sink: out}
sinks:
  out: {type: file, path: $W/lost-out.jsonl}
EOF
} >"$W/lost.yaml"
run_bg lost "$W/lost.yaml"
lost_pid=$LAST_PID
wait_until 30 "the partition assigned" _grep_count_at_least 1 "$W/lost.log" \
    'assigned'
kill -9 "$MOCK_PID"
wait "$MOCK_PID" 2>/dev/null || true
untrack "$MOCK_PID"
LAST_PID=$lost_pid
expect_failed lost "source \"ev\": lost every one of its brokers $BOOT" \
    "(brokers.timeout)"
[ "$WAIT_RC" -eq 1 ] || fail "lost: exit status $WAIT_RC, expected 1"
echo "guard.sh: ok"
