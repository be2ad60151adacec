#!/usr/bin/env bash
# Where a tiny run's fixed cost goes: the wall time of one process, median of RUNS (default
# 30), for the tiny run itself (one 1 kB file into a tmpfs file:// store, trainer `true`),
# with and without cloud detection; `resume-run --version`; /usr/bin/true; and two C
# programs whose main only prints, one linked with -lcurl and one without, which measure
# what loading libcurl's dependency tree costs a process that never calls it.
#   scripts/bench_startup.sh            (RR=path/to/resume-run, default build/resume-run)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/benchlib.sh"
RR=${RR:-$root/build/resume-run}
RUNS=${RUNS:-30}
[ -x "$RR" ] || { echo "bench_startup.sh: no $RR (build first, or set RR)" >&2; exit 2; }
work=$(mktemp -d)
store=$(mktemp -d -p /dev/shm)
trap 'rm -rf "$work" "$store"' EXIT
mkdir -p "$work/ck/step-1"
head -c 1000 /dev/urandom >"$work/ck/step-1/a.bin"
printf '#include <stdio.h>\nint main(void) { puts("x"); return 0; }\n' >"$work/p.c"
printf '#include <curl/curl.h>\n#include <stdio.h>\nint main(int c, char **v) { (void)v; if (c > 9) curl_easy_init(); puts("x"); return 0; }\n' >"$work/pc.c"
cc -O2 "$work/p.c" -o "$work/plain"
cc -O2 "$work/pc.c" -o "$work/with-curl" -lcurl

# median_us CMD...: "median (min-max)" of RUNS runs of CMD, wall time printed in ms
median_us() {
	local i t0
	for ((i = 0; i < RUNS; i++)); do
		rm -rf "${store:?}"/*
		t0=$(date +%s%N)
		"$@" >/dev/null 2>&1 || true
		echo $((($(date +%s%N) - t0) / 1000))
	done | stats | awk '{ printf "%.1f ms (%.1f-%.1f)", $1 / 1000, $2 / 1000, $3 / 1000 }'
}
echo "| what | wall, median (min-max) of $RUNS |"
echo "|---|---|"
echo "| tiny run, --cloud auto | $(median_us "$RR" --store "file://$store/st" --checkpoint-dir "$work/ck" -- true) |"
echo "| tiny run, --cloud none | $(median_us "$RR" --cloud none --store "file://$store/st" --checkpoint-dir "$work/ck" -- true) |"
echo "| resume-run --version | $(median_us "$RR" --version) |"
echo "| /usr/bin/true | $(median_us /usr/bin/true) |"
echo "| C program, no libcurl | $(median_us "$work/plain") |"
echo "| C program linked with -lcurl ($(ldd "$work/with-curl" | wc -l) shared objects) | $(median_us "$work/with-curl") |"
