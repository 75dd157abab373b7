# lib.sh - helpers shared by the crash tests (kill_diff.sh, disk_full.sh;
# sourced after tests/cli/lib.sh's setup, with TM, TOOL, JOB and T set,
# in the folder the job runs in).  The job (tests/crash/job.yaml) reads
# data/ and writes out/; with $CK_SET it checkpoints into ck/.

# The sinks of job.yaml, each with the parts of its rows that make the
# key (and window) the order of rows is checked per: extended regular
# expressions over the compact JSON lines (awk's match), "sink=re re;".
SINKS="results retracts pages pairs late late_pages late_join dead"
GROUPS_RE='results="user":"[^"]*" "window_start":[-0-9]*;'\
'retracts="user":"[^"]*" "window_start":[-0-9]*;'\
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

# visible_parts [ID]: the committed output of every sink: its visible
# parts (out/SINK.jsonl.part-<10 digits>-<writer>; hidden in-progress and
# pending parts start with a dot), in name order: by checkpoint, then
# writer, the order docs/checkpoints.md promises a consumer across
# rescales.  With ID, those a fresh start at checkpoint ID moved aside
# (in out/SINK.jsonl.replaced-ID/).  Prints the paths, one a line.
visible_parts() {
    d=[0-9]
    for s in $SINKS; do
        dir=out
        if [ -n "${1:-}" ]; then dir="out/$s.jsonl.replaced-$1"; fi
        for f in "$dir/$s".jsonl.part-$d$d$d$d$d$d$d$d$d$d-*; do
            if [ -e "$f" ]; then echo "$f"; fi
        done
    done
}

# make_golden [P2]: two runs without checkpoints and faults (with
# $JOB_SET, extra --set options); the first's grouped output is gold.g,
# and the second, at parallelism P2 when given, must repeat it.
make_golden() {
    for pass in 1 2; do
        rm -rf out
        p_opt=""
        if [ $pass = 2 ] && [ -n "${1:-}" ]; then p_opt="--parallelism $1"; fi
        expect_exit "golden run $pass" 0 "$TM" run "$JOB" --quiet \
            ${JOB_SET:-} $p_opt
        for s in $SINKS; do
            [ -f "out/$s.jsonl" ] || fail "the golden run wrote no $s.jsonl"
        done
        (cd out && grouped $(for s in $SINKS; do echo "$s.jsonl"; done)) \
            >"gold$pass.g"
        # The upsert sink's table as a set (the order of first appearance
        # follows the writers, so it may differ by parallelism).
        sort out/upserts.jsonl >"gold_upserts$pass.txt"
    done
    if ! cmp -s gold1.g gold2.g ||
        ! cmp -s gold_upserts1.txt gold_upserts2.txt; then
        diff gold1.g gold2.g | head -20 >&2
        fail "the golden run does not repeat"
    fi
    [ -s gold_upserts1.txt ] || fail "the golden run wrote no upsert table"
    mv gold1.g gold.g
    mv gold_upserts1.txt gold_upserts.txt
    rm -f gold2.g gold_upserts2.txt
    for s in results retracts pages pairs late late_pages dead; do
        grep -q "^$s " gold.g || fail "the golden run wrote nothing to $s"
    done
    # No record is late for the join (see kill_diff.sh, Determinism).
    ! grep -q "^late_join " gold.g || fail "the golden run has late join input"
    grep -q '"timing":"late"' gold.g || fail "the golden run has no late refire"
    grep -q '"op":"-"' gold.g || fail "the golden run has no retraction"
    rm -rf out
}

# check_all WHAT [ID]: every sink's committed output (or what the fresh
# start at checkpoint ID moved aside) equals the golden one (grouped),
# and (without ID) so does the upsert table (as a set); prints a diff and
# returns 1 when not.
check_all() {
    if [ -z "${2:-}" ]; then
        sort out/upserts.jsonl >"$T/got_upserts.txt" 2>/dev/null || true
        if ! cmp -s gold_upserts.txt "$T/got_upserts.txt"; then
            echo "$1: the upsert table differs from the golden run's:" >&2
            diff gold_upserts.txt "$T/got_upserts.txt" | head -10 >&2
            return 1
        fi
    fi
    grouped $(visible_parts "${2:-}") >"$T/got.g"
    if ! cmp -s gold.g "$T/got.g"; then
        echo "$1: the committed output differs from the golden run's" \
            "(- golden, + committed; grouped by sink, key and window):" >&2
        diff -u gold.g "$T/got.g" | head -40 >&2
        return 1
    fi
    return 0
}

# invoke SPEC [OPTION...]: one invocation of the checkpointed job (with
# $JOB_SET and the options given) under a fault spec: "" none,
# "delay:MS" SIGKILL after MS, "stop:MS" SIGINT after MS, else a
# TDM_FIO_FAULT value.  Sets rc.  stderr goes to $T/inv.err and is
# appended to $T/run.err.
invoke() {
    spec_=$1
    shift
    set +e
    case "$spec_" in
    "")
        "$TM" run "$JOB" --quiet $CK_SET ${JOB_SET:-} "$@" \
            >/dev/null 2>"$T/inv.err" ;;
    delay:*)
        "$TOOL" kill-after "${spec_#delay:}" "$TM" run "$JOB" --quiet \
            $CK_SET ${JOB_SET:-} "$@" >/dev/null 2>"$T/inv.err" ;;
    stop:*)
        "$TOOL" kill-after -s INT "${spec_#stop:}" "$TM" run "$JOB" \
            --quiet $CK_SET ${JOB_SET:-} "$@" >/dev/null 2>"$T/inv.err" ;;
    *)
        TDM_FIO_FAULT="$spec_" "$TM" run "$JOB" --quiet $CK_SET \
            ${JOB_SET:-} "$@" >/dev/null 2>"$T/inv.err" ;;
    esac
    rc=$?
    set -e
    echo "--- $spec_ $* (exit code $rc)" >>"$T/run.err"
    cat "$T/inv.err" >>"$T/run.err"
}

# stopped SPEC: whether the invocation just made was SPEC's SIGINT stop
# (a graceful cancel, or an interrupt before the handler was set up).
stopped() {
    case "$1" in stop:*) ;; *) return 1 ;; esac
    [ "$rc" = 130 ] ||
        grep -q '^tidemark: job "crash" stopped' "$T/inv.err"
}

# draw_kill: a random kill spec in $spec: a third inside the checkpoint
# and commit protocol (the N-th rename, fsync, mkdir or unlink), a third
# at the N-th write(2), a third after a delay.
n_proto=0
n_write=0
n_delay=0
draw_kill() {
    rnd 6
    case $R in
    0 | 1)
        rnd 4
        case $R in
        0) rnd 30; spec="rename:$((R + 1)):KILL" ;;
        1) rnd 60; spec="fsync:$((R + 1)):KILL" ;;
        2) rnd 4; spec="mkdir:$((R + 1)):KILL" ;;
        *) rnd 8; spec="unlink:$((R + 1)):KILL" ;;
        esac
        n_proto=$((n_proto + 1)) ;;
    2 | 3)
        rnd 200; spec="write:$((R + 1)):KILL"
        n_write=$((n_write + 1)) ;;
    *)
        rnd 200; spec="delay:$((R + 5))"
        n_delay=$((n_delay + 1)) ;;
    esac
}
