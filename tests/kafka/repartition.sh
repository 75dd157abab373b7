#!/bin/sh
# SPDX-License-Identifier: MIT
# repartition.sh - two `tidemark run` processes in one group, keyed by a
# field (user) that is not the Kafka key (region): the records go through
# the internal topic "g-repartition" keyed by user, with watermark
# markers, and the union of the two processes' windows equals the same
# job run in one process over one file per input partition.  Each user's
# windows come from one process only (it owns the user's internal
# partition), and both processes do some of the work.
# Usage: repartition.sh TIDEMARK SOURCE_DIR MOCK TOOL
. "$(dirname "$0")/lib.sh"
kafka_init "$@"

# Input: 4 partitions, 4 internal partitions (the internal topic is
# created with the cluster, as an operator would).
start_mock clicks:4 g-repartition:4
for p in 0 1 2 3; do
    # Every record carries its region r<p>, the Kafka key; 8 users.
    gen_clicks "$p" 60 8 |
        sed "s/^{/{\"r\":\"r$p\",/" >"$W/part-$p.jsonl"
done

SCHEMA="schema: {r: string, user: string, ts: int64, p: int64}"
WMARK="watermark: {strategy: bounded, max_out_of_orderness: 1s}"

# The reference: one process, one file per input partition.
{
    cat <<EOF
name: rep
sources:
  clicks:
    type: file
    path: $W/part-*.jsonl
    $SCHEMA
    timestamp.field: ts
    $WMARK
EOF
    window_yaml ref.jsonl
} >"$W/ref.yaml"
run_fg ref "$W/ref.yaml"
NREF=$(count_lines "$W/ref.jsonl")
# 4 partitions x 60 records 700 ms apart span 42 s: 5 windows of 8 users.
[ "$NREF" -ge 30 ] || fail "reference run wrote only $NREF rows"

# The Kafka job: key.field r is not key_by user, so (repartition: auto)
# the rows are re-partitioned by user.
for n in a b; do
    {
        echo "name: rep"
        echo "commit.interval: 200ms"
        echo "sources:"
        kafka_source_yaml clicks clicks g "$SCHEMA" "key.field: r" \
            "timestamp.field: ts" "$WMARK" "repartition: auto" \
            "repartition.writers: 2"
        window_yaml "$n.jsonl"
    } >"$W/$n.yaml"
done
run_bg a "$W/a.yaml"
PA=$LAST_PID
run_bg b "$W/b.yaml"
PB=$LAST_PID

# Partitions held now: "assigned K partition(s)" minus revoked/lost
# lines of the input; "repartition assigned"/"revoked" lines of the
# internal topic.
input_held() {
    cat "$W/a.log" "$W/b.log" 2>/dev/null | awk '
        /repartition/ { next }
        / assigned [0-9]+ partition/ {
            for (i = 1; i < NF; i++) if ($i == "assigned") n += $(i + 1) }
        /(revoked|lost) [0-9]+ partition/ {
            for (i = 1; i < NF; i++)
                if ($i == "revoked" || $i == "lost") n -= $(i + 1) }
        END { print n + 0 }'
}
internal_held() {
    cat "$W/a.log" "$W/b.log" 2>/dev/null | awk '
        /repartition: assigned/ { n++ } /repartition: revoked/ { n-- }
        END { print n + 0 }'
}
both_members() {
    [ "$(input_held)" -eq 4 ] && [ "$(internal_held)" -eq 4 ] &&
        grep -q "repartition: assigned" "$W/a.log" &&
        grep -q "repartition: assigned" "$W/b.log"
}
wait_until 30 "both processes hold input and internal partitions" \
    both_members

# The data, then one record per partition an hour ahead: it moves every
# writer's watermark past all the windows above (which then fire), while
# its own window stays open (on_cancel stop writes no open window).
for p in 0 1 2 3; do
    produce clicks --partition "$p" --key-field r --ts-field ts \
        "$W/part-$p.jsonl"
done
for p in 0 1 2 3; do
    echo "{\"r\":\"r$p\",\"user\":\"far\",\"ts\":$((T0 + 3600000)),\"p\":$p}"
done >"$W/far.jsonl"
produce clicks --partition-field p --key-field r --ts-field ts \
    "$W/far.jsonl"

wait_lines "$NREF" 60 "$W/a.jsonl" "$W/b.jsonl"
# Both stop together (on_cancel stop: open windows are not written).
# (One signal each: a second one kills.)
kill -TERM "$PA" "$PB" 2>/dev/null || true
wait_pid "$PA" 60 || fail "process a exited with status $WAIT_RC"
wait_pid "$PB" 60 || fail "process b exited with status $WAIT_RC"
cat "$W/a.jsonl" "$W/b.jsonl" >"$W/union.jsonl"
same_lines "$W/ref.jsonl" "$W/union.jsonl"

# Ownership: a user's windows come from one process; both worked.
users_of() {
    sed -n 's/.*"user": *"\([^"]*\)".*/\1/p' "$1" | sort -u
}
users_of "$W/a.jsonl" >"$W/ua.txt"
users_of "$W/b.jsonl" >"$W/ub.txt"
[ -z "$(comm -12 "$W/ua.txt" "$W/ub.txt")" ] ||
    fail "users with windows in both processes: $(comm -12 "$W/ua.txt" \
        "$W/ub.txt" | tr '\n' ' ')"
[ -s "$W/ua.txt" ] && [ -s "$W/ub.txt" ] ||
    fail "one process wrote no window (a: $(count_lines "$W/a.jsonl"), b:" \
        "$(count_lines "$W/b.jsonl"))"
# The input offsets were committed (after the hand-off to the internal
# topic) and so were the internal topic's.
"$TOOL" committed "$BOOT" g clicks >"$W/committed-in.txt" ||
    fail "committed (input)"
"$TOOL" committed "$BOOT" g-shuffle g-repartition >"$W/committed-rep.txt" ||
    fail "committed (internal)"
committed_count() {
    awk -F '\t' '$2 >= 0 { n++ } END { print n + 0 }' "$1"
}
[ "$(committed_count "$W/committed-in.txt")" -eq 4 ] ||
    fail "input offsets committed: $(cat "$W/committed-in.txt")"
[ "$(committed_count "$W/committed-rep.txt")" -ge 1 ] ||
    fail "no internal offset committed: $(cat "$W/committed-rep.txt")"
echo "repartition.sh: ok"
