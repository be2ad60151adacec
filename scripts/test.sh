#!/usr/bin/env bash
# README's second command, and what CI runs: install what the tests need, then build and run
# every test (unit, integration, deployment, frameworks, Python, fuzz-corpus replay) on a
# normal build, except a chosen set of integration tests that run under ASan+UBSan instead;
# the unit suites and the fuzz corpora again under ASan+UBSan (the list and why are below);
# the threaded parts under TSan; and a short libFuzzer run of every fuzz target. It ends
# with one line, "tests: N passed, N failed", and a non-zero status when anything failed,
# and prints how long each phase took.
#
# Timeline (2 cores): the sanitizer and fuzz builds, then the fuzzing, run at the lowest
# priority during the normal tests, most of which wait on servers, trainers and deadlines
# rather than compute, so the background takes the idle CPU and the tests lose almost none.
# The ASan and the TSan tests start beside the normal ones as soon as their builds are
# done; the fuzzing, if not done by the end of the tests, ends last.
#
# FUZZ_SECONDS (default 5 here; 20 for scripts/fuzz.sh alone) is each fuzz target's CPU time;
# two targets run at a time, each from the corpus the previous runs on this machine left
# (FUZZ_KEEP, minimised), so that the runs add up instead of each starting from the seeds.
set -euo pipefail
cd "$(dirname "$0")/.."

jobs=$(nproc)
tmp=$(mktemp -d)
bg_pgid=
asan_pid=
tsan_pid=
trap '[ -z "$bg_pgid" ] || kill -- "-$bg_pgid" 2>/dev/null || true
      [ -z "$asan_pid" ] || pkill -P "$asan_pid" 2>/dev/null || true
      [ -z "$tsan_pid" ] || pkill -P "$tsan_pid" 2>/dev/null || true; rm -rf "$tmp"' EXIT

# Phase timings, "start end name" in seconds from the start, printed at the end.
timings=()
begin() { echo "== $1"; phase_name=$1; phase_start=$SECONDS; }
end() { timings+=("$phase_start $SECONDS $phase_name"); }

begin "dependencies"
scripts/install-deps.sh test
end

# Every CMake configure below (the four trees, and the wheel's through scikit-build-core)
# compiles through ccache, whose cache (~/.cache/ccache) outlives the checkout: a run after a
# change recompiles what changed, not four whole trees. Paths are taken relative to the
# checkout, so a clone elsewhere hits the same entries.
if command -v ccache >/dev/null; then
	export CMAKE_C_COMPILER_LAUNCHER=ccache CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=true
fi

begin "static checks (layers; cJSON parsing only in storage/common/json.c)"
scripts/check-layers.sh
# cJSON writes a process-wide error position on every parse: all parsing goes through
# rr_json_parse (storage/common/json.c), which serialises it. TSan cannot see inside the
# uninstrumented libcjson, so this check keeps other parse calls out.
if grep -rn 'cJSON_Parse' agent storage cloud | grep -v '^storage/common/json.c:'; then
	echo "cJSON_Parse* outside storage/common/json.c: use rr_json_parse" >&2
	exit 1
fi
end

begin "build (RelWithDebInfo, -Wall -Wextra, warnings are errors: RR_WERROR)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRR_WERROR=ON >/dev/null
cmake --build build -j"$jobs"
end

# The threaded parts (persist pool, persister, restore, cloud watcher and its providers'
# stop flags, the multi-node notice fan-out, HTTP batches, the stores' parallel requests,
# JSON parsing) under ThreadSanitizer: their unit suites, which drive those threads, and the
# whole agent in the two-writers test (event loop, persister, pool and retention at once)
# and the slow-link test (a notice cancelling requests in flight from another thread).
tsan_suites="pool persist persister restore cloud_watch cloud_aws cloud_gcp cloud_azure cloud_detect fanout http store_s3 store_gcs store_sealed metrics json"

# The other builds, one after another at the lowest priority, while the normal tests run,
# then the fuzzing. Their output goes to a log, shown when one fails; each phase below waits
# for its build. Each fuzz target gets FUZZ_SECONDS of CPU whenever the tests leave it
# some; one input may take 120 s of the clock before it counts as a hang (25 s in
# scripts/fuzz.sh alone), as the fuzzer may wait for the CPU that long.
export FUZZ_SECONDS=${FUZZ_SECONDS:-5}
export FUZZ_KEEP=${FUZZ_KEEP:-${XDG_CACHE_HOME:-$HOME/.cache}/resume-run/fuzz-corpus}
background() { # T0: the start, in seconds since the epoch
	set -e
	exec >"$tmp/builds.log" 2>&1
	# -O1, as the sanitizers' authors advise: asserts on, and the exhaustive FP16 scans
	# three times faster than at -O0.
	cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O1" \
		-DRR_SANITIZE=ON -DRR_WERROR=ON
	cmake --build build-asan -j"$jobs"
	echo "$(($(date +%s) - $1))" >"$tmp/asan.built"
	cmake -S . -B build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRR_TSAN=ON -DRR_WERROR=ON
	# shellcheck disable=SC2046,SC2086 # the suite names are split into arguments on purpose
	cmake --build build-tsan -j"$jobs" --target resume-run $(printf 'test_%s ' $tsan_suites)
	echo "$(($(date +%s) - $1))" >"$tmp/tsan.built"
	cmake -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O1" \
		-DRR_FUZZ=ON -DRR_SANITIZE=ON -S . -B build-fuzz
	# shellcheck disable=SC2046 # one argument per target
	cmake --build build-fuzz -j"$jobs" --target $(cd tests/fuzz && ls fuzz_*.c | sed 's/\.c$//')
	echo "$(($(date +%s) - $1))" >"$tmp/fuzz.built"
	local rc=0
	BUILD_DIR=build-fuzz FUZZ_PARALLEL=2 FUZZ_TIMEOUT=120 scripts/fuzz.sh >"$tmp/fuzz.log" 2>&1 || rc=$?
	echo "$rc" >"$tmp/fuzz.rc"
	echo "$(($(date +%s) - $1))" >"$tmp/fuzz.fuzzed"
}
export -f background
export jobs tmp tsan_suites
bg_start=$SECONDS
# setsid: its own process group, so that the EXIT trap stops the compilers too.
setsid nice -n 19 bash -c "background $(($(date +%s) - SECONDS))" &
bg_pgid=$!
# wait_background FILE WHAT: until the background wrote $tmp/FILE; exits with the builds'
# log when it ended without (WHAT failed).
wait_background() {
	while [ ! -e "$tmp/$1" ]; do
		if ! kill -0 "$bg_pgid" 2>/dev/null && [ ! -e "$tmp/$1" ]; then
			cat "$tmp/builds.log" >&2
			echo "test.sh: $2 failed (its log is above)" >&2
			exit 1
		fi
		sleep 1
	done
}

# The CPU as a ctest resource: two slots per core. A test that keeps a core busy, or times
# what it asked for, takes two (RESOURCE_GROUPS in CMakeLists.txt); one that waits takes none.
cat >"$tmp/resources.json" <<JSON
{"version": {"major": 1, "minor": 0}, "local": [{"cpu": [{"id": "0", "slots": $((2 * jobs))}]}]}
JSON

# run_ctest NAME DIR [ARGS...]: ctest, $ctest_jobs tests at a time (default: one per core),
# with the CPU resource above, shown and logged to $tmp/NAME.log; then count NAME. A failing
# ctest does not end the script (the count says it).
passed=0
failed=0
summary=()
run_ctest() {
	local name=$1 dir=$2
	shift 2
	ctest --test-dir "$dir" --output-on-failure -j"${ctest_jobs:-$jobs}" \
		--resource-spec-file "$tmp/resources.json" "$@" 2>&1 | tee "$tmp/$name.log" || true
	count "$name"
}

# count NAME: adds $tmp/NAME.log's ctest summary ("N tests failed out of M") to the closing
# count; a ctest that printed no summary (it crashed, or found no tests) is one failure.
count() {
	local name=$1 f t
	read -r f t < <(sed -nE 's/.* tests passed, ([0-9]+) tests failed out of ([0-9]+).*/\1 \2/p' "$tmp/$name.log" | tail -n 1) || true
	if [ -z "${t:-}" ]; then
		echo "test.sh: ctest ($name) printed no summary: counted as 1 failure" >&2
		f=1 t=1
	fi
	passed=$((passed + t - f))
	failed=$((failed + f))
	summary+=("$name: $((t - f)) of $t")
}

# What runs under ASan+UBSan. Memory and undefined-behaviour errors live in our C code, so
# each path of it needs one run under the sanitizers, not one per test that passes by:
#  - every unit suite (each module in-process, error paths included) and every fuzz corpus
#    replay (each parser of outside data on every input ever found interesting);
#  - the integration tests below, which drive what the unit suites cannot reach: the binary's
#    command line, event loop, supervisor and signals, and each store end to end against its
#    real server, with the failure paths (faults, corruption, refusals, disk full):
asan_integration=(drill_restore restart exit_status pid1_reaping signal_notices cloud_notices
	corrupt_fallback manifest_path_escape disk_full hostile_trainer_fs hostile_trainer_proc
	store_lifecycle packs encryption suspect report late_files first_hour two_writers
	s3_faults s3_faults_process gcs_store azure_store azure_faults)
#  These run under ASan only, not again on the normal build: they check the same outcomes
#  there, with every memory access and undefined operation checked besides, and the paths
#  they share with the normal build's binary (start, restore, persist, notices, exit) are run
#  on it by the tests that stay (the soaks, the frameworks, end-to-end training, the
#  third-party servers, the deployment artefacts). -O2's own hazards are the compiler's
#  warnings (an error in this build) and the undefined behaviour UBSan stops at.
#  Not under ASan, because their C paths are the ones above and what they add is not
#  memory safety: the soaks and long runs repeat those paths many times (chaos_soak, long_run,
#  store_growth, notice_lifecycle); the framework tests' subject is the trainer side
#  (e2e_training, multinode, frameworks_torchrun, torch_save, torch_adam_step,
#  tensor_checkpoints: the tensor parsers run under ASan in their unit suites and fuzz
#  corpora); the third-party servers check our clients against another implementation
#  (s3_store on SeaweedFS, gcs_fake_server, aws_notices_aemm) and TLS (tls) is curl's; timing is
#  what deadline, slow_link (under TSan), every_auto, s3_faults_more (stalls past timeouts)
#  and clock_skew (libfaketime) check, and the sanitizers' slowdown is what would change it;
#  azure_entra and azure_two_writers run azure_store's and two_writers' code with another
#  credential or a second writer; secrets checks what is logged. The deployment, frameworks
#  and Python tests are not built in the sanitizer builds at all (CMakeLists.txt says why).
asan_only="^integration_($(IFS='|'; echo "${asan_integration[*]}"))\$"

# The sanitizer builds' tests run beside the normal ones, each as soon as its build is done
# (not after them: at the end of the normal tests the ASan ones alone left a third of the
# CPU idle for ~170 s), fewer at a time and at a lower priority (nice 5: the normal tests'
# busy and timing ones come first; at the same priority, three of them took twice as long
# and e2e_training passed its timeout); their logs are shown after the normal tests.
# sanitized NAME BUILT DIR JOBS [CTEST ARGS...]: once the build that writes $tmp/BUILT is
# done, ctest on DIR, JOBS tests at a time, logged to $tmp/NAME.log; start and end (seconds
# from the start of test.sh) in $tmp/NAME.times.
sanitized() {
	local name=$1 built=$2 dir=$3 j=$4 t0=$(($(date +%s) - SECONDS)) start
	shift 4
	wait_background "$built" "the build for the $name tests"
	start=$(($(date +%s) - t0))
	nice -n 5 ctest --test-dir "$dir" --output-on-failure -j"$j" \
		--resource-spec-file "$tmp/resources.json" "$@" >"$tmp/$name.log" 2>&1 || true
	echo "$start $(($(date +%s) - t0))" >"$tmp/$name.times"
}
# sanitized_done NAME TITLE: shows NAME's log, its phase time, and counts it.
sanitized_done() {
	local start stop
	if read -r start stop <"$tmp/$1.times" 2>/dev/null; then
		timings+=("$start $stop $2")
	fi
	cat "$tmp/$1.log" 2>/dev/null || true
	count "$1"
}
asan_name="tests under ASan + UBSan (unit suites, fuzz corpora, ${#asan_integration[@]} integration tests; beside the normal tests)"
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
	sanitized "ASan+UBSan" asan.built build-asan "$jobs" -R "^(unit_.*|fuzz_.*_corpus)\$|$asan_only" &
asan_pid=$!
tsan_name="threaded unit suites and the agent under TSan ($tsan_suites; two_writers, slow_link; beside the normal tests)"
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" \
	sanitized TSan tsan.built build-tsan 1 \
	-R "^(unit_($(echo "$tsan_suites" | tr ' ' '|'))|integration_(two_writers|slow_link))\$" &
tsan_pid=$!

begin "tests (normal build; the sanitizer and fuzz builds, the sanitizer tests, then the fuzzing, run beside them)"
# Three tests per core: most wait on servers, trainers and deadlines; the busy and the
# timing ones, at most one per core, run beside the waiting ones (the CPU resource above).
# At two per core, with the busy ones counted as two of ctest's slots, the pass took 836 s
# with its slots full (3303 of 3344 slot-seconds) and its own CPU use near 60%, the fuzzing
# taking the rest: it was slot-bound, not CPU-bound.
ctest_jobs=$((3 * jobs)) run_ctest normal build -E "$asan_only"
end

echo "== $asan_name"
wait "$asan_pid" || true
asan_pid=
sanitized_done "ASan+UBSan" "$asan_name"
echo "== $tsan_name"
wait "$tsan_pid" || true
tsan_pid=
sanitized_done TSan "$tsan_name"

begin "fuzzing: the rest of it (libFuzzer, $FUZZ_SECONDS s of CPU per target, two at a time, in the background since build-fuzz)"
wait_background fuzz.fuzzed "the fuzzing (scripts/fuzz.sh)"
# One count per target run: "fuzz.sh: T ok" or "fuzz.sh: T FAILED"; a fuzz.sh that failed
# before running any (a build error) counts as one failure.
cat "$tmp/fuzz.log"
rc=$(cat "$tmp/fuzz.rc")
fuzz_ok=$(grep -cE '^fuzz.sh: [a-z0-9_]+ ok;' "$tmp/fuzz.log" || true)
fuzz_failed=$(grep -cE '^fuzz.sh: [a-z0-9_]+ FAILED' "$tmp/fuzz.log" || true)
if [ "$rc" -ne 0 ] && [ "$fuzz_failed" -eq 0 ]; then
	fuzz_failed=1
fi
passed=$((passed + fuzz_ok))
failed=$((failed + fuzz_failed))
summary+=("fuzz targets: $fuzz_ok of $((fuzz_ok + fuzz_failed)) runs")
end

echo "== phases (seconds from the start)"
for b in asan tsan fuzz; do
	[ ! -e "$tmp/$b.built" ] || timings+=("$bg_start $(cat "$tmp/$b.built") build-$b (background, lowest priority, from its start)")
done
[ ! -e "$tmp/fuzz.fuzzed" ] || timings+=("$(cat "$tmp/fuzz.built") $(cat "$tmp/fuzz.fuzzed") fuzzing (background, lowest priority)")
for t in "${timings[@]}"; do
	read -r start stop name <<<"$t"
	printf '%6d s  %5d-%-5d  %s\n' "$((stop - start))" "$start" "$stop" "$name"
done
echo "== total: $SECONDS s"
(IFS=';'; echo "== ${summary[*]}")
echo "tests: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
