#!/usr/bin/env bash
# README's second command, and what CI runs: install what the tests need, then build and run
# every test (unit, integration, Python, fuzz-corpus replay) twice: a normal build and an
# ASan+UBSan build; the threaded parts' unit suites under TSan; then a short libFuzzer run
# of every fuzz target.
# FUZZ_SECONDS (default 10 here; 20 for scripts/fuzz.sh alone) bounds each fuzz target's run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh test

jobs=$(nproc)
echo "== layers (includes point only down)"
scripts/check-layers.sh
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

# The threaded parts (persist pool, persister, restore, cloud watcher and its providers'
# stop flags, HTTP batches, the stores' parallel requests, JSON parsing) under
# ThreadSanitizer: their unit suites, which drive those threads, and the whole agent in the
# two-writers test (event loop, persister, pool and retention at once) and the slow-link
# test (a notice cancelling requests in flight from another thread).
tsan_suites="pool persist persister restore cloud_watch cloud_aws cloud_gcp cloud_azure cloud_detect http store_s3 store_gcs store_sealed metrics json"
echo "== build with ThreadSanitizer (threaded suites: $tsan_suites; the agent)"
cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRR_TSAN=ON -DRR_WERROR=ON >/dev/null
# shellcheck disable=SC2046,SC2086 # the suite names are split into arguments on purpose
cmake --build build-tsan -j"$jobs" --target resume-run $(printf 'test_%s ' $tsan_suites)
echo "== threaded unit suites under TSan"
# cJSON writes a process-wide error position on every parse: all parsing goes through
# rr_json_parse (storage/common/json.c), which serialises it. TSan cannot see inside the
# uninstrumented libcjson, so this check keeps other parse calls out.
if grep -rn 'cJSON_Parse' agent storage cloud | grep -v '^storage/common/json.c:'; then
	echo "cJSON_Parse* outside storage/common/json.c: use rr_json_parse" >&2
	exit 1
fi
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	ctest --test-dir build-tsan --output-on-failure -j"$jobs" \
	-R "^(unit_($(echo "$tsan_suites" | tr ' ' '|'))|integration_(two_writers|slow_link))\$" | tee "$log"
read -r failed3 total3 < <(count "$log")

export FUZZ_SECONDS=${FUZZ_SECONDS:-10} # 15 targets: keeps the whole command near 20 minutes
echo "== fuzzing (libFuzzer, $FUZZ_SECONDS s per target)"
scripts/fuzz.sh
fuzzed=$(ls tests/fuzz/fuzz_*.c | wc -l)

echo "== normal build: $((total1 - failed1)) of $total1; ASan+UBSan: $((total2 - failed2)) of $total2; TSan: $((total3 - failed3)) of $total3; fuzz targets: $fuzzed"
echo "tests: $((total1 - failed1 + total2 - failed2 + total3 - failed3 + fuzzed)) passed, $((failed1 + failed2 + failed3)) failed"
