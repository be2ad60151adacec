#!/usr/bin/env bash
# README's second command, and what CI runs: install what the tests need, then build and run
# every test (unit, integration, Python, fuzz-corpus replay) twice: a normal build and an
# ASan+UBSan build; then a short libFuzzer run of every fuzz target.
# FUZZ_SECONDS (default 20) bounds each fuzz target's run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh test

jobs=$(nproc)
echo "== build (RelWithDebInfo, -Wall -Wextra -Werror)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"
echo "== tests"
ctest --test-dir build --output-on-failure -j"$jobs"

echo "== build with AddressSanitizer + UndefinedBehaviorSanitizer"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DRR_SANITIZE=ON >/dev/null
cmake --build build-asan -j"$jobs"
echo "== tests under ASan + UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	ctest --test-dir build-asan --output-on-failure -j"$jobs"

echo "== fuzzing (libFuzzer, ${FUZZ_SECONDS:-20} s per target)"
scripts/fuzz.sh
