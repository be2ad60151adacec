#!/usr/bin/env bash
# README's second command, and what CI runs: install what the tests need, then build and run
# every test (unit, integration, Python, fuzz-corpus replay) twice: a normal build and an
# ASan+UBSan build; then a short libFuzzer run of every fuzz target.
# FUZZ_SECONDS (default 20) bounds each fuzz target's run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh test

jobs=$(nproc)
echo "== build (RelWithDebInfo, -Wall -Wextra, warnings are errors: RR_WERROR)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRR_WERROR=ON >/dev/null
cmake --build build -j"$jobs"
# ctest's summary line ("N tests failed out of M") feeds the closing count below.
count() { sed -nE 's/.* tests passed, ([0-9]+) tests failed out of ([0-9]+).*/\1 \2/p' "$1" | tail -n 1; }
log=$(mktemp); trap 'rm -f "$log"' EXIT

echo "== tests"
ctest --test-dir build --output-on-failure -j"$jobs" | tee "$log"
read -r failed1 total1 < <(count "$log")

echo "== build with AddressSanitizer + UndefinedBehaviorSanitizer"
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DRR_SANITIZE=ON -DRR_WERROR=ON >/dev/null
cmake --build build-asan -j"$jobs"
echo "== tests under ASan + UBSan"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	ctest --test-dir build-asan --output-on-failure -j"$jobs" | tee "$log"
read -r failed2 total2 < <(count "$log")

echo "== fuzzing (libFuzzer, ${FUZZ_SECONDS:-20} s per target)"
scripts/fuzz.sh
fuzzed=$(ls tests/fuzz/fuzz_*.c | wc -l)

echo "== normal build: $((total1 - failed1)) of $total1; ASan+UBSan: $((total2 - failed2)) of $total2; fuzz targets: $fuzzed"
echo "tests: $((total1 - failed1 + total2 - failed2 + fuzzed)) passed, $((failed1 + failed2)) failed"
