#!/bin/sh
# browser-deps.sh - installs what the browser test of the web page needs,
# only what is missing: Debian's chromium (apt) and playwright-core from
# the npm registry (npm ci in tests/browser, pinned by package-lock.json;
# playwright-core downloads no browser of its own).  Used by test.sh and
# CI before `ctest -L browser`.
set -eu
cd "$(dirname "$0")/.."
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
if ! dpkg-query -W -f='${Status}' chromium 2>/dev/null |
        grep -q "install ok installed"; then
    echo "browser-deps.sh: installing chromium" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium \
        >/dev/null
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "browser-deps.sh: installing nodejs and npm" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm \
        >/dev/null
fi
if [ ! -d tests/browser/node_modules/playwright-core ]; then
    echo "browser-deps.sh: npm ci in tests/browser" >&2
    (cd tests/browser && npm ci --no-audit --no-fund --loglevel=error)
fi
