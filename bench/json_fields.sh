# SPDX-License-Identifier: MIT
# json_fields.sh - sourced by bench/run_nexmark.sh and
# tests/cli/nexmark_q5.sh: json_fields FILE NAME... prints, per JSON line
# of FILE (flat objects as tidemark's sinks write them), the values of
# the named fields, space-separated, without quotes.
json_fields() {
    f=$1
    shift
    awk -F'[{}:,"]+' -v names="$*" '
        BEGIN { n = split(names, name, " ") }
        { for (i = 2; i < NF; i += 2) v[$i] = $(i + 1)
          line = v[name[1]]
          for (k = 2; k <= n; k++) line = line " " v[name[k]]
          print line }' "$f"
}
