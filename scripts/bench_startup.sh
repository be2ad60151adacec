#!/usr/bin/env bash
# Where a tiny run's fixed cost goes: the wall time of one process, median of RUNS (default
# 30), for the tiny run itself (one 1 kB file into a tmpfs file:// store, trainer `true`),
# with and without cloud detection; `resume-run --version`; /usr/bin/true; and two C
# programs whose main only prints, one linked with -lcurl and one without, which measure
# what loading libcurl's dependency tree costs a process that never calls it; and two that
# call curl_global_init, with libcurl linked or loaded by dlopen (RTLD_LAZY, as
# storage/net/curl_api.c does), which measure what loading it on first use costs a process
# that needs it. PROFILE=1 also profiles 100 `--cloud none` tiny runs (perf record) and
# prints the share of each shared object in the agent's samples. With RR_OLD (the binary
# before a change) its rows come beside the new one's, old and new in turns.
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
cat >"$work/init.c" <<'EOF_C'
#include <curl/curl.h>
#include <dlfcn.h>
int main(void)
{
#ifdef RR_DLOPEN
	void *lib = dlopen("libcurl.so.4", RTLD_LAZY | RTLD_LOCAL);
	CURLcode (*init)(long) = lib ? (CURLcode (*)(long))dlsym(lib, "curl_global_init") : NULL;
	return init && init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : 1;
#else
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : 1;
#endif
}
EOF_C
cc -O2 "$work/init.c" -o "$work/init-linked" -lcurl
cc -O2 -DRR_DLOPEN "$work/init.c" -o "$work/init-dlopen" -ldl

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
for b in ${RR_OLD:+"$RR_OLD"} "$RR"; do
	which=""
	[ -n "${RR_OLD:-}" ] && { [ "$b" = "$RR" ] && which=", new" || which=", old"; }
	echo "| tiny run, --cloud auto$which | $(median_us "$b" --cloud auto --store "file://$store/st" --checkpoint-dir "$work/ck" -- true) |"
	echo "| tiny run, --cloud none$which | $(median_us "$b" --cloud none --store "file://$store/st" --checkpoint-dir "$work/ck" -- true) |"
	echo "| resume-run --version$which | $(median_us "$b" --version) |"
done
echo "| /usr/bin/true | $(median_us /usr/bin/true) |"
echo "| C program, no libcurl | $(median_us "$work/plain") |"
echo "| C program linked with -lcurl ($(ldd "$work/with-curl" | wc -l) shared objects) | $(median_us "$work/with-curl") |"
echo "| C program, libcurl linked, curl_global_init | $(median_us "$work/init-linked") |"
echo "| C program, libcurl by dlopen, curl_global_init | $(median_us "$work/init-dlopen") |"

if [ "${PROFILE:-0}" = 1 ]; then
	for ((i = 0; i < 100; i++)); do
		echo "rm -rf '$store/st'; '$RR' --cloud none --store 'file://$store/st' --checkpoint-dir '$work/ck' -- true 2>/dev/null"
	done >"$work/loop.sh"
	perf record -q -F 15000 -o "$work/perf.data" bash "$work/loop.sh" >/dev/null 2>&1
	echo
	echo "Shared objects' share of all samples, 100 tiny runs with --cloud none (perf record):"
	perf report -i "$work/perf.data" --no-children --sort comm,dso --stdio 2>/dev/null |
		grep -E "^ +[0-9.]+% +$(basename "$RR") " | head -n 8
fi
