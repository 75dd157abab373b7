#!/bin/sh
# SPDX-License-Identifier: MIT
# format.sh - the C sources' layout is mechanical: .clang-format (4-space
# indent, Linux braces, 80 columns) decides it, not the reviewer.
#
#   sh scripts/format.sh          rewrites every file that differs
#   sh scripts/format.sh --check  lists the files that differ, exits 1
#
# Files: every tracked *.c and *.h under src/, include/, tests/, bench/
# and examples/.  Hand-aligned tables stay between "clang-format off" and
# "clang-format on" comments.  scripts/test.sh (the README's test command,
# and so CI) runs the check first.
set -eu
cd "$(dirname "$0")/.."
fmt=${CLANG_FORMAT:-clang-format}
command -v "$fmt" >/dev/null 2>&1 || {
    echo "format.sh: $fmt not found (apt-get install clang-format)" >&2
    exit 2
}
files=$(git ls-files 'src/*.[ch]' 'include/*.h' 'tests/*.[ch]' \
    'bench/*.[ch]' 'examples/*.[ch]')
if [ "${1:-}" = "--check" ]; then
    bad=0
    for f in $files; do
        if ! "$fmt" --style=file "$f" | cmp -s "$f" -; then
            echo "format.sh: $f differs from .clang-format (sh scripts/format.sh)" >&2
            bad=$((bad + 1))
        fi
    done
    [ "$bad" -eq 0 ] || { echo "format.sh: $bad file(s) to format" >&2; exit 1; }
    echo "format.sh: $(echo "$files" | wc -l) files match .clang-format"
else
    for f in $files; do
        "$fmt" --style=file -i "$f"
    done
fi
