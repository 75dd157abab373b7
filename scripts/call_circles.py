#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# call_circles.py - the file-to-file call graph of one source folder and
# its circles (strongly connected components), as the architecture
# review measures them: a file A calls a file B when A's text, comments
# and strings left out, names f( for a non-static function f defined
# only in B (Universal Ctags finds the definitions and their storage).
# Prints every edge "A -> B: names" and every circle; exits 1 when there
# is a circle.
# Usage: scripts/call_circles.py FOLDER   (e.g. src/server)
import glob
import os
import re
import subprocess
import sys


def definitions(files):
    out = subprocess.run(
        ['ctags', '-x', '--c-kinds=f', '--fields-C=+{properties}',
         '--_xformat=%N %F %{C.properties}'] + files,
        check=True, capture_output=True, text=True).stdout
    where = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and 'static' in parts[2]:
            continue
        where.setdefault(parts[0], set()).add(parts[1])
    return {f: next(iter(s)) for f, s in where.items() if len(s) == 1}


def stripped(path):
    text = open(path, encoding='utf-8', errors='replace').read()
    text = re.sub(r'/\*.*?\*/', ' ', text, flags=re.S)
    return re.sub(r'"(\\.|[^"\\\n])*"', '""', text)


def circles(nodes, edges):
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


def main():
    folder = sys.argv[1]
    files = sorted(glob.glob(os.path.join(folder, '*.c')))
    home = definitions(files)
    edges, names = {}, {}
    for a in files:
        text = stripped(a)
        for f, b in home.items():
            if b != a and re.search(r'\b%s\s*\(' % re.escape(f), text):
                edges.setdefault(a, set()).add(b)
                names.setdefault((a, b), []).append(f)
    for (a, b), fs in sorted(names.items()):
        print('%s -> %s: %s' % (a, b, ' '.join(sorted(fs))))
    found = circles(files, edges)
    for comp in found:
        print('circle: ' + ' '.join(comp))
    print('%d files, %d edges, %d circles' %
          (len(files), len(names), len(found)))
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main())
