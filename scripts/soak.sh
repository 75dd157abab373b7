#!/bin/sh
# SPDX-License-Identifier: MIT
# soak.sh - the whole test suite several times in a row on a loaded
# machine: each round runs two copies of the suite at once, from two
# build folders of the same source (as two CI jobs sharing one machine
# would), and the soak stops at the first round where either copy has a
# failing test.  A test whose verdict depends on the machine's speed, or
# that collides with a copy of itself (a fixed port, a fixed path in
# /tmp), shows up here and not in a quiet run.
#
#   sh scripts/soak.sh [-r ROUNDS] BUILD_A BUILD_B
#
# Both folders must be configured and built (with -DTDM_TEST_HOOKS=ON:
# the suite's fault cases need the hooks).  Default 5 rounds.  Each
# copy runs `ctest -j2`; the per-round logs are kept in BUILD_X/soak-N.log.
# Exit 0 when every round passed in both copies, 1 otherwise.
set -eu

rounds=5
if [ "${1:-}" = "-r" ]; then
    rounds=$2
    shift 2
fi
if [ $# -ne 2 ]; then
    echo "usage: $0 [-r ROUNDS] BUILD_A BUILD_B" >&2
    exit 2
fi
a=$(cd "$1" && pwd)
b=$(cd "$2" && pwd)

# copy DIR N: runs the suite in DIR, log in DIR/soak-N.log; its exit
# status is ctest's.
copy() {
    (cd "$1" && ctest -j2 --output-on-failure >"soak-$2.log" 2>&1)
}

i=1
while [ "$i" -le "$rounds" ]; do
    start=$(date +%s)
    ra=0
    rb=0
    copy "$a" "$i" &
    pa=$!
    copy "$b" "$i" &
    pb=$!
    wait "$pa" || ra=$?
    wait "$pb" || rb=$?
    end=$(date +%s)
    sa=$(grep -E 'tests passed' "$a/soak-$i.log" || echo '?')
    sb=$(grep -E 'tests passed' "$b/soak-$i.log" || echo '?')
    echo "round $i: $((end - start)) s; A: $sa; B: $sb"
    if [ "$ra" -ne 0 ] || [ "$rb" -ne 0 ]; then
        grep -h -A20 'The following tests FAILED' "$a/soak-$i.log" \
            "$b/soak-$i.log" >&2 || true
        exit 1
    fi
    i=$((i + 1))
done
echo "soak: $rounds rounds passed in both copies"
