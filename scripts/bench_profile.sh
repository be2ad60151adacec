#!/usr/bin/env bash
# Where a persist's and a restore's CPU goes (the shares README's "Speed" and
# docs/performance.md quote): `perf record --call-graph dwarf` over RUNS whole runs of the
# mixed-real set (scripts/bench_make_ckpt.py) into a tmpfs file store, then as many
# restores of it into tmpfs; for each, the share of the agent's samples under each part of
# the work (perf report --children: a part's own samples and those of what it calls).
#   scripts/bench_profile.sh            (RR=path/to/resume-run, default build/resume-run)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
RR=${RR:-$root/build/resume-run}
RUNS=${RUNS:-3}
[ -x "$RR" ] || { echo "bench_profile.sh: no $RR (build first, or set RR)" >&2; exit 2; }
command -v perf >/dev/null || { echo "bench_profile.sh: needs perf (apt-get install linux-perf)" >&2; exit 2; }
work=$(mktemp -d /dev/shm/rr-bench-profile.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
export RESUME_RUN_CLOUD=none
/usr/bin/python3 "$root/scripts/bench_make_ckpt.py" mixed-real "$work/src" >/dev/null
mkdir -p "$work/ck" && cp -al "$work/src" "$work/ck/step-1"

for ((i = 0; i < RUNS; i++)); do
	echo "rm -rf '$work/st'; '$RR' --store 'file://$work/st' --checkpoint-dir '$work/ck' -- true 2>/dev/null"
done >"$work/persist.sh"
for ((i = 0; i < RUNS; i++)); do
	echo "rm -rf '$work/r'; '$RR' restore --store 'file://$work/st' --to '$work/r' 2>/dev/null"
done >"$work/restore.sh"
perf record -q --call-graph dwarf,16384 -o "$work/persist.data" bash "$work/persist.sh" >/dev/null 2>&1
perf record -q --call-graph dwarf,16384 -o "$work/restore.data" bash "$work/restore.sh" >/dev/null 2>&1

# share DATA SYMBOL...: the --children share of the agent's samples under the symbols. perf
# lists a function once per process, or once per caller for a static one, so each symbol's
# entries are added up (a function is never under itself); of several symbols (one calling
# the other, or a tail call hiding the caller) the largest sum counts.
report() {
	perf report -i "$1" --children --comm "$(basename "$RR")" --sort sym -g none --stdio \
		--percent-limit 0.5 2>/dev/null | awk '/%/ { print $1, $NF }' | tr -d '%'
}
share() { # DATA SYMBOL...
	local data=$1
	shift
	awk -v syms=" $* " 'index(syms, " " $2 " ") { sum[$2] += $1 }
		END { for (s in sum) if (sum[s] > best) best = sum[s]; printf "%.1f%%", best }' "$data.txt"
}
report "$work/persist.data" >"$work/persist.txt"
report "$work/restore.data" >"$work/restore.txt"
echo "| part of the work | persist | restore |"
echo "|---|---|---|"
row() { # LABEL SYMBOL...
	local label=$1 p r
	shift
	p=$(share "$work/persist" "$@")
	r=$(share "$work/restore" "$@")
	echo "| $label | $p | $r |"
}
row "zstd (compress / decompress)" ZSTD_compress2 ZSTD_decompress_usingDDict ZSTD_decompressDCtx
row "reading files (the kernel's copy)" vfs_read __x64_sys_pread64 __x64_sys_read
row "writing files (the kernel: pages, copy)" vfs_write
row "SHA-256 of the stored bytes" rr_sha256 rr_sha256_ni rr_store_chunk_address
row "xxHash of the original bytes" XXH3_128bits rr_xxh128_hex
row "FP16 narrowing / widening" s_to_fp16_avx2 s_from_fp16_avx2
row "F32 statistics" s_stats_avx2
