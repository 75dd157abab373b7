#!/bin/sh
# deps.sh - installs the Debian packages tidemark needs to build and test,
# only those that are missing.  Used by demo.sh, test.sh and CI.
set -eu
pkgs="cmake make gcc pkg-config lemon libedit-dev libjansson-dev libyaml-dev libmicrohttpd-dev librdkafka-dev"
[ "${TDM_WITH_CLANG:-0}" = 1 ] && pkgs="$pkgs clang libclang-rt-14-dev"
[ "${TDM_WITH_FORMAT:-0}" = 1 ] && pkgs="$pkgs clang-format"
# promtool (the test command: cli.http, cli.monitoring)
[ "${TDM_WITH_PROMTOOL:-0}" = 1 ] && pkgs="$pkgs prometheus"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps.sh: installing$missing" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
