# start.sh - the start both crash tests share (kill_diff.sh, disk_full.sh;
# sourced first, with their arguments TIDEMARK SOURCE_DIR CRASH_TOOL as
# the positional parameters): outputs under /dev/shm when it is writable
# (checkpoint fsyncs cost nothing there) unless TMPDIR is set, the CLI
# tests' helpers and setup, TOOL and JOB as absolute paths, this folder's
# lib.sh, and the working folder $T/w the job runs in ($T/out and $T/err
# are expect_exit's).
if [ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ]; then
    TMPDIR=/dev/shm
    export TMPDIR
fi
. "$(dirname "$0")/../cli/lib.sh"
if [ $# -lt 3 ]; then
    echo "usage: $0 TIDEMARK SOURCE_DIR CRASH_TOOL" >&2
    exit 2
fi
# Absolute paths: the runs happen in $T.
abs() { case $1 in /*) echo "$1" ;; *) echo "$(pwd)/$1" ;; esac; }
TOOL=$(abs "$3")
setup "$(abs "$1")" "$2"
JOB=$(pwd)/tests/crash/job.yaml
. "$(pwd)/tests/crash/lib.sh"
mkdir "$T/w"
cd "$T/w"
