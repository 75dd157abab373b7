#!/bin/sh
# SPDX-License-Identifier: MIT
# layers.sh - the house's layering rules, checked on the built library and
# the sources, so that a change which re-creates a call circle, a symbol
# outside the tdm namespace or a private include in a client fails CI
# instead of waiting for the next review (docs/architecture.md, "The
# runtime's layers"; docs/design-notes.md, issue 19).
#
#   sh tests/cli/layers.sh LIBTIDEMARK.a SOURCE_ROOT   (CTest: arch.layers)
#
# Rules:
#   L1  every global symbol of the static library starts with tdm
#       (tdm_ public, tdm__ internal); the shared library hides the rest,
#       the static one does not.  AddressSanitizer's one-definition-rule
#       markers of our own globals (__odr_asan.tdm_...) are its, not ours.
#   L2  no call circle among the files of src/runtime, nor among those of
#       src/server: a file calls another when its object needs a symbol
#       that the other's object defines (nm, so only real references).
#   L3  src/cli uses only tidemark.h (plus its own headers and the SQL
#       front end's sql/sql.h); src/sql only tidemark.h, cli/cli.h and
#       its own headers (with the generated parser's); src/server uses
#       only tidemark.h and core/core.h (allocation).
#   L4  no function in src/runtime is over 100 lines (a function runs
#       from the line after its signature's "{" line to its "}" line);
#       src/runtime/task_source.c is under 1,000 lines.
set -eu
lib=$1
root=$2
fails=0
fail() {
    echo "layers: $*" >&2
    fails=$((fails + 1))
}

# L1
bad=$(nm -g --defined-only "$lib" |
    awk 'NF == 3 && $3 !~ /^tdm/ && $3 !~ /^__odr_asan[.]tdm/ { print $3 }' |
    sort -u)
[ -z "$bad" ] || fail "L1: global symbols outside tdm_/tdm__:" $bad

# L2: edges file -> file from nm -A (member:symbol), closure by
# Floyd-Warshall over the folder's members, every pair on a circle named.
circles() {
    folder=$1
    members=$(cd "$root/src/$folder" && ls *.c | sed 's/$/.o/' | tr '\n' ' ')
    nm -A "$lib" 2>/dev/null | awk -v members="$members" '
        BEGIN { n = split(members, m, " ");
                for (i = 1; i <= n; i++) { idx[m[i]] = i } }
        {
            split($1, p, ":"); obj = p[2]
            if (!(obj in idx)) next
            if (NF == 3 && $2 ~ /^[TDBR]$/) def[$3] = obj
            else if (NF == 2 && $1 ~ /:$/ || $(NF-1) == "U") use[obj, $NF] = 1
        }
        END {
            for (k in use) {
                split(k, q, SUBSEP); a = q[1]; s = q[2]
                if ((s in def) && def[s] != a) {
                    e[idx[a], idx[def[s]]] = 1
                    why[idx[a], idx[def[s]]] = s
                }
            }
            for (i = 1; i <= n; i++) for (j = 1; j <= n; j++) r[i, j] = e[i, j]
            for (k = 1; k <= n; k++) for (i = 1; i <= n; i++)
                if (r[i, k]) for (j = 1; j <= n; j++) if (r[k, j]) r[i, j] = 1
            for (i = 1; i <= n; i++) {
                if (done[i]) continue
                g = ""
                for (j = 1; j <= n; j++)
                    if (j == i || (r[i, j] && r[j, i])) {
                        if (j != i || r[i, i]) g = g " " m[j]
                        grp[j] = i
                    }
                if (g == "" || g == " " m[i]) continue
                for (j = 1; j <= n; j++) if (grp[j] == i) done[j] = 1
                print "circle:" g
                for (a = 1; a <= n; a++) for (b = 1; b <= n; b++)
                    if (e[a, b] && grp[a] == i && grp[b] == i &&
                        r[i, a] && r[a, i] && r[i, b] && r[b, i])
                        print "  " m[a] " -> " m[b] " (" why[a, b] ", ...)"
            }
        }'
}
for folder in runtime server; do
    out=$(circles "$folder")
    [ -z "$out" ] || fail "L2: call circle in src/$folder:
$out"
done

# L3: a quoted include names tidemark.h, a header of the client's own
# folder, or (server only) core/core.h.
client_includes() {
    folder=$1
    extra=$2
    for f in "$root"/src/"$folder"/*.[ch]; do
        grep -h '^#include "' "$f" | sed 's/^#include "\([^"]*\)".*/\1/' |
            while read -r inc; do
                base=${inc#"$folder"/}
                [ "$inc" = tidemark.h ] && continue
                [ -f "$root/src/$folder/$base" ] && continue
                for x in $extra; do [ "$inc" = "$x" ] && continue 2; done
                echo "$(basename "$f") includes \"$inc\""
            done
    done
}
out=$(client_includes cli "sql/sql.h")
[ -z "$out" ] || fail "L3: src/cli reaches below tidemark.h:
$out"
out=$(client_includes sql "cli/cli.h sql/sql_grammar.h")
[ -z "$out" ] || fail "L3: src/sql reaches below tidemark.h and cli.h:
$out"
out=$(client_includes server "core.h core/core.h")
[ -z "$out" ] || fail "L3: src/server reaches below tidemark.h and core.h:
$out"

# L4
long=$(awk '
    FNR == 1 { prev = "" }
    /^\{/ && prev ~ /\)$/ { start = FNR; name = prev; infn = 1; next }
    /^\}/ && infn { if (FNR - start - 1 > 100)
                        printf "%s:%d %d lines %s\n", FILENAME, start,
                               FNR - start - 1, name
                    infn = 0 }
    { prev = $0 }' "$root"/src/runtime/*.c)
[ -z "$long" ] || fail "L4: functions over 100 lines:
$long"
n=$(wc -l <"$root/src/runtime/task_source.c")
[ "$n" -lt 1000 ] || fail "L4: src/runtime/task_source.c has $n lines"

[ "$fails" -eq 0 ] || { echo "layers: $fails rule(s) broken" >&2; exit 1; }
echo "layers: L1-L4 hold"
