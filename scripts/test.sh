#!/bin/sh
# test.sh - builds tidemark twice (a normal build and one with
# AddressSanitizer + UndefinedBehaviorSanitizer, warnings as errors in both)
# and runs every test in each: unit tests, the model-based test, the fuzz
# corpus replay, the conformance runner over ../shared/conformance, and
# the web page in headless Chromium (scripts/browser-deps.sh installs it).
set -eu
cd "$(dirname "$0")/.."
sh scripts/deps.sh
sh scripts/browser-deps.sh
jobs=2
echo "== normal build"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTDM_WERROR=ON >/dev/null
cmake --build build -j$jobs
echo "== sanitizer build (ASan + UBSan)"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DTDM_WERROR=ON -DTDM_SANITIZE=ON >/dev/null
cmake --build build-asan -j$jobs
echo "== tests, normal build"
(cd build && ctest -j$jobs --output-on-failure)
echo "== tests, sanitizer build"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TDM_TEST_TIMEOUT_MULTIPLIER=3
(cd build-asan && ctest -j$jobs --output-on-failure)
