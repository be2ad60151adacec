#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) in build-fuzz and runs each for
# FUZZ_SECONDS of CPU time on a scratch copy of its seed corpus: on an idle core that is as
# many seconds of the clock; at a low priority beside other work (scripts/test.sh runs it so)
# it takes longer and fuzzes as much. What the fuzzer finds stays in the scratch copy
# (build-fuzz/fuzz-work/<target>/); promote inputs to tests/fuzz/corpus/ by hand, so the
# repository only gains seeds someone looked at. With FUZZ_KEEP, each run also starts from
# the corpus the previous runs left there (outside the repository), and leaves its own,
# minimised (libFuzzer's -merge=1: only inputs that add coverage), so that short runs add
# up. A crash, leak, timeout or out-of-memory fails the script and prints the path of the
# input that caused it.
#
# usage: scripts/fuzz.sh [TARGET...]        default: every tests/fuzz/fuzz_*.c
# env:   FUZZ_SECONDS  CPU seconds per target (default 20)
#        FUZZ_TIMEOUT  seconds one input may run before it is a finding (default 25; the
#                      clock's, so give more where the fuzzer shares the CPU)
#        BUILD_DIR     build directory (default build-fuzz)
#        FUZZ_ARGS     extra libFuzzer flags, e.g. "-jobs=4 -workers=4"
#        FUZZ_PARALLEL targets run at once (default 1); each is one process on one core
#        FUZZ_KEEP     a directory kept between runs: FUZZ_KEEP/<target> is added to the
#                      seeds, and replaced by this run's corpus, minimised
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

seconds=${FUZZ_SECONDS:-20}
input_timeout=${FUZZ_TIMEOUT:-25}
build=${BUILD_DIR:-build-fuzz}
case $build in /*) ;; *) build=$root/$build ;; esac
if [ $# -gt 0 ]; then
	targets=("$@")
else
	targets=()
	for f in tests/fuzz/fuzz_*.c; do targets+=("$(basename "$f" .c)"); done
fi

for v in "FUZZ_SECONDS:$seconds" "FUZZ_TIMEOUT:$input_timeout"; do
	case ${v#*:} in
	'' | *[!0-9]* | 0)
		echo "fuzz.sh: ${v%%:*} must be a whole number of seconds, at least 1" >&2
		exit 2
		;;
	esac
done
tick=$(getconf CLK_TCK)
if ! command -v clang >/dev/null; then
	echo "fuzz.sh: clang not found (Debian: apt-get install clang libclang-rt-14-dev)" >&2
	exit 2
fi

# RR_FUZZ gives the library (rrcore) coverage instrumentation as well as the targets.
# -O1 with the sanitizers, as libFuzzer's and ASan's authors advise (asserts on: Debug).
cmake -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS_DEBUG="-g -O1" \
	-DRR_FUZZ=ON -DRR_SANITIZE=ON -S . -B "$build"
cmake --build "$build" --target "${targets[@]}" -j "$(nproc 2>/dev/null || echo 2)"

work=$build/fuzz-work
parallel=${FUZZ_PARALLEL:-1}
case $parallel in '' | *[!0-9]* | 0) echo "fuzz.sh: FUZZ_PARALLEL must be at least 1" >&2; exit 2 ;; esac

# cpu_of PID: the CPU time PID has used, in clock ticks (utime + stime of /proc/PID/stat;
# the command name before them holds no space here).
cpu_of() {
	local f
	read -r -a f <"/proc/$1/stat" 2>/dev/null || return 1
	echo $((f[13] + f[14]))
}

# fuzz_one TARGET: runs it, then prints what it found (all at once, so that the reports of
# targets running side by side do not interleave); its status says whether it passed.
# libFuzzer counts -max_total_time on the clock, so the budget is kept here: once the
# fuzzer has used FUZZ_SECONDS of CPU it gets SIGUSR1, on which libFuzzer finishes the
# input in hand and exits (status 0, its final stats printed). The clock limit is only a
# backstop (60 times the budget), as is libFuzzer's per-input timeout for a hang.
fuzz_one() {
	local t=$1 bin=$build/$1 seeds=tests/fuzz/corpus/$1 dir=$work/$1 rc=0 artifacts n pid now used=0
	rm -rf "$dir"
	mkdir -p "$dir/corpus" "$dir/artifacts"
	if [ -d "$seeds" ]; then
		cp -R "$seeds/." "$dir/corpus/"
	fi
	if [ -n "${FUZZ_KEEP:-}" ] && [ -d "$FUZZ_KEEP/$t" ]; then
		cp -R "$FUZZ_KEEP/$t/." "$dir/corpus/"
	fi
	# shellcheck disable=SC2086 # FUZZ_ARGS is a list of flags
	"$bin" -max_total_time="$((60 * seconds))" -timeout="$input_timeout" -rss_limit_mb=4096 \
		-print_final_stats=1 -artifact_prefix="$dir/artifacts/" ${FUZZ_ARGS:-} \
		"$dir/corpus" >"$dir/log" 2>&1 &
	pid=$!
	while now=$(cpu_of "$pid") && used=$now && [ "$used" -lt $((seconds * tick)) ]; do
		sleep 0.2
	done
	kill -USR1 "$pid" 2>/dev/null || true
	wait "$pid" || rc=$?
	{
		grep -E '^(#[0-9]+[[:space:]]+DONE|stat::(number_of_executed_units|average_exec_per_sec|new_units_added|peak_rss_mb))' \
			"$dir/log" | sed "s/^/  $t: /" || true
		artifacts=$(find "$dir/artifacts" -type f 2>/dev/null | sort)
		if [ "$rc" -ne 0 ] || [ -n "$artifacts" ]; then
			echo "fuzz.sh: $t FAILED (exit $rc); end of its log:"
			tail -n 40 "$dir/log"
			if [ -n "$artifacts" ]; then
				while IFS= read -r a; do
					echo "fuzz.sh: $t artifact: $a"
					echo "fuzz.sh:   reproduce: $bin $a"
				done <<<"$artifacts"
			fi
			rc=1
		else
			n=$(find "$dir/corpus" -type f | wc -l)
			echo "fuzz.sh: $t ok; $((used / tick)) s of CPU; scratch corpus now holds $n inputs in $dir/corpus"
			[ -z "${FUZZ_KEEP:-}" ] || keep "$t" "$bin" "$dir"
		fi
	} >"$dir/report" 2>&1
	return "$rc"
}

# keep TARGET BIN DIR: FUZZ_KEEP/TARGET becomes DIR's corpus minimised (unchanged when the
# merge fails; it is only a head start for the next run).
keep() {
	local t=$1 bin=$2 dir=$3
	mkdir -p "$FUZZ_KEEP" && rm -rf "$FUZZ_KEEP/$t.new" && mkdir "$FUZZ_KEEP/$t.new" &&
		"$bin" -merge=1 -timeout="$input_timeout" -rss_limit_mb=4096 "$FUZZ_KEEP/$t.new" \
			"$dir/corpus" >"$dir/merge.log" 2>&1 &&
		rm -rf "${FUZZ_KEEP:?}/$t" && mv "$FUZZ_KEEP/$t.new" "$FUZZ_KEEP/$t" &&
		echo "fuzz.sh: $t: $(find "$FUZZ_KEEP/$t" -type f | wc -l) inputs kept in $FUZZ_KEEP/$t for the next run" ||
		echo "fuzz.sh: $t: could not keep the corpus (see $dir/merge.log)"
}

for t in "${targets[@]}"; do
	if [ ! -x "$build/$t" ]; then
		echo "fuzz.sh: $build/$t was not built" >&2
		exit 2
	fi
done
failed=()
declare -A running=() # pid -> target
reap() {              # waits for one of the running targets and reports it
	local pid rc=0
	wait -n -p pid "${!running[@]}" || rc=$?
	if [ "$rc" -eq 0 ]; then
		cat "$work/${running[$pid]}/report"
	else
		cat "$work/${running[$pid]}/report" >&2
		failed+=("${running[$pid]}")
	fi
	unset "running[$pid]"
}
for t in "${targets[@]}"; do
	while [ ${#running[@]} -ge "$parallel" ]; do reap; done
	echo "fuzz.sh: running $t for ${seconds} s of CPU (log: $work/$t/log)"
	fuzz_one "$t" &
	running[$!]=$t
done
while [ ${#running[@]} -gt 0 ]; do reap; done

if [ ${#failed[@]} -gt 0 ]; then
	echo "fuzz.sh: failed: ${failed[*]}" >&2
	exit 1
fi
echo "fuzz.sh: all ${#targets[@]} targets ran ${seconds} s of CPU without a finding"
