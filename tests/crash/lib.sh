# lib.sh - helpers shared by the crash tests (kill_diff.sh, disk_full.sh;
# sourced after tests/cli/lib.sh's setup, with TM, TOOL, JOB and T set,
# in the folder the job runs in).  The job (tests/crash/job.yaml) reads
# data/ and writes out/; with $CK_SET it checkpoints into ck/.

# The sinks of job.yaml, each with the parts of its rows that make the
# key (and window) the order of rows is checked per: extended regular
# expressions over the compact JSON lines (awk's match), "sink=re re;".
SINKS="results pages pairs late late_pages late_join dead"
GROUPS_RE='results="user":"[^"]*" "window_start":[-0-9]*;'\
'pages="page":"[^"]*" "window_start":[-0-9]*;'\
'pairs="left[.]order_id":"[^"]*" "window_start":[-0-9]*;'\
'late="user":"[^"]*";'\
'late_pages="page":"[^"]*";'\
'late_join="order_id":"[^"]*";'\
'dead="location":"[^:]*'

CK_SET="--set checkpoint.dir=ck --set checkpoint.interval=10ms"

# rnd N: R = a pseudo-random number in [0, N) from the state X (a 31-bit
# linear congruential generator in shell arithmetic, the same on every
# shell, so a seed means the same kills everywhere).
rnd() {
    X=$(((X * 1103515245 + 12345) % 2147483648))
    R=$(((X / 65536) % $1))
}

# seed_rnd SEED: X from SEED, scrambled (xor-shift-multiply rounds), so
# that neighbouring seeds do not start correlated sequences.
seed_rnd() {
    X=$(($1 % 2147483648))
    X=$((((X ^ (X >> 7)) * 2654435761 + 12345) % 2147483648))
    X=$((((X ^ (X >> 13)) * 2246822519 + 1) % 2147483648))
    X=$((((X ^ (X >> 11)) * 3266489917 + 7) % 2147483648))
}

# make_input RECORDS: data/ from crash_tool gen (a fixed seed).
make_input() {
    mkdir -p data
    "$TOOL" gen -n "$1" -S 8 data
}

# grouped FILE...: the lines of the files, each file read as the output
# of the sink its name starts with (out/<sink>.jsonl...), grouped by
# sink and key with a stable sort (keys in byte order, the rows of a key
# in the order of the files and lines given), as "sink key<TAB>line".
# Two outputs group to the same text exactly when every sink holds the
# same lines as multisets and the same sequence of lines per key.
grouped() {
    awk -v spec="$GROUPS_RE" '
        BEGIN {
            n = split(spec, parts, ";")
            for (i = 1; i <= n; i++) {
                eq = index(parts[i], "=")
                res[substr(parts[i], 1, eq - 1)] = substr(parts[i], eq + 1)
            }
        }
        FNR == 1 {
            s = FILENAME
            sub(/^.*\//, "", s)
            sub(/\.jsonl.*$/, "", s)
            m = split(res[s], re, " ")
        }
        {
            k = s " "
            for (i = 1; i <= m; i++)
                k = k (match($0, re[i]) ? substr($0, RSTART, RLENGTH) : "?") " "
            printf "%s\t%d\t%s\n", k, NR, $0
        }' "$@" </dev/null | sort -s -t "$TAB" -k1,1 | cut -f1,3
}

# visible_parts: the committed output of every sink: its visible parts
# (out/SINK.jsonl.part-<writer>-<10 digits>; hidden in-progress and
# pending parts start with a dot), in name order (by writer, then
# checkpoint).  Prints the paths, one a line.
visible_parts() {
    d=[0-9]
    for s in $SINKS; do
        for f in out/"$s".jsonl.part-*-$d$d$d$d$d$d$d$d$d$d; do
            if [ -e "$f" ]; then echo "$f"; fi
        done
    done
}

# make_golden: two runs without checkpoints and faults; the first's
# grouped output is gold.g, and the second must repeat it.
make_golden() {
    for pass in 1 2; do
        rm -rf out
        expect_exit "golden run $pass" 0 "$TM" run "$JOB" --quiet
        for s in $SINKS; do
            [ -f "out/$s.jsonl" ] || fail "the golden run wrote no $s.jsonl"
        done
        (cd out && grouped $(for s in $SINKS; do echo "$s.jsonl"; done)) \
            >"gold$pass.g"
    done
    if ! cmp -s gold1.g gold2.g; then
        diff gold1.g gold2.g | head -20 >&2
        fail "the golden run does not repeat"
    fi
    mv gold1.g gold.g
    rm -f gold2.g
    for s in results pages pairs late late_pages dead; do
        grep -q "^$s " gold.g || fail "the golden run wrote nothing to $s"
    done
    # No record is late for the join (see kill_diff.sh, Determinism).
    ! grep -q "^late_join " gold.g || fail "the golden run has late join input"
    grep -q '"timing":"late"' gold.g || fail "the golden run has no late refire"
    rm -rf out
}

# check_all WHAT: every sink's committed output equals the golden one
# (grouped); prints a diff and returns 1 when not.
check_all() {
    grouped $(visible_parts) >"$T/got.g"
    if ! cmp -s gold.g "$T/got.g"; then
        echo "$1: the committed output differs from the golden run's" \
            "(- golden, + committed; grouped by sink, key and window):" >&2
        diff -u gold.g "$T/got.g" | head -40 >&2
        return 1
    fi
    return 0
}
