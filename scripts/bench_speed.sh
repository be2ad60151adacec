#!/usr/bin/env bash
# Speed on checkpoints shaped like the ones users have (issue 32), run alone with
# BENCH_SECTIONS=speed scripts/bench.sh (or this script directly). Writes (or replaces) the
# "## Speed on real-shaped checkpoints" section of $BENCH_OUT (default BENCHMARKS.md).
#
# Sets (scripts/bench_make_ckpt.py, deterministic): mixed-real (a small transformer's
# weights and AdamW state, 304 tensors of 320 elements to 10 MB, 4 safetensors shards),
# hf (the same as an HF Trainer writes it: model.safetensors, optimizer.pt from torch.save,
# scheduler.pt, rng_state.pth, ...), large (GPT-2-medium-shaped weights, 1.4 GB, one file),
# tiny (one 1 kB file: the fixed cost of a run), and the full bench's transformer when
# scripts/bench.sh has trained it.
#
# Per set and run, interleaved: the whole command `resume-run --store file://TMPFS
# --checkpoint-dir DIR -- true` (start, store lookup, persist, LATEST, ledger, exit), then
# `tar -cf - FILES | zstd -1 -T0` of the same files into the same tmpfs; `resume-run
# restore` into tmpfs, then `zstd -d | tar -x` of that archive; the same with $RR_OLD (the
# binary before, when given) beside each. Restore to disk (/var/tmp) with `dd ... conv=fsync`
# of as many bytes beside it. Each figure: the median of $RUNS (min-max), wall clock, and
# the CPU time (user+sys) of the command. The stored objects of $RR and $RR_OLD are compared:
# the same chunk names (content addresses) and the same manifest but for its times.
#
#   RUNS=5 RR_OLD=/path/to/old/resume-run scripts/bench_speed.sh
#   BENCH_BASE=<commit> scripts/bench_speed.sh   # builds RR_OLD from that commit
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
RUNS=${RUNS:-5}
SETS=${SETS:-mixed-real hf large tiny}
DISK_SETS=${DISK_SETS:-mixed-real large}
OUT=${BENCH_OUT:-$root/BENCHMARKS.md}
RR=${RR:-$root/build/resume-run}
PY=/usr/bin/python3
export PYTHONPATH=$root/scripts RESUME_RUN_CLOUD=none
[ -x "$RR" ] || { cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null; cmake --build build -j2 >/dev/null; }
work=$(mktemp -d /dev/shm/rr-bench-speed.XXXXXX)
disk=$(mktemp -d /var/tmp/rr-bench-speed.XXXXXX)
trap 'rm -rf "$work" "$disk"' EXIT
if [ -n "${BENCH_BASE:-}" ] && [ -z "${RR_OLD:-}" ]; then
	echo "== building $BENCH_BASE (the binary before)"
	mkdir -p "$disk/base" && git archive "$BENCH_BASE" | tar -x -C "$disk/base"
	cmake -S "$disk/base" -B "$disk/base/build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build "$disk/base/build" -j2 --target resume-run >/dev/null
	RR_OLD=$disk/base/build/resume-run
	RR_OLD_NAME="the binary of $BENCH_BASE"
fi
RR_OLD=${RR_OLD:-}
. "$(dirname "$0")/benchlib.sh" # stats, ratio, mb, gbps, mbps, ms_since
# timed FILE CMD...: runs CMD, appends "<wall ms> <cpu ms>" (its own and its children's
# user+sys from wait4, to the microsecond) to FILE.
timed() {
	local f=$1; shift
	$PY -c '
import os, sys, time
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execvp("bash", ["bash", "-c", sys.argv[1], "bash"] + sys.argv[2:])
_, st, ru = os.wait4(pid, 0)
wall = (time.perf_counter() - t0) * 1e3
if os.waitstatus_to_exitcode(st):
    sys.exit("failed: " + " ".join(sys.argv[2:]))
print(f"{wall:.1f} {(ru.ru_utime + ru.ru_stime) * 1e3:.1f}")' "$@" >> "$f"
}
bins="new"; [ -n "$RR_OLD" ] && bins="old new"
bin() { if [ "$1" = old ]; then echo "$RR_OLD"; else echo "$RR"; fi; }
# order RUN: the binaries in the order run RUN takes them, old first in odd runs and new
# first in even ones, so that neither always runs right after the other.
order() { if [ -n "$RR_OLD" ] && [ $(($1 % 2)) -eq 0 ]; then echo "new old"; else echo "$bins"; fi; }

tf=${BENCH_CACHE:-/var/tmp/resume-run-bench}/transformer-27m/step-${STEPS:-30}
for c in $SETS; do $PY scripts/bench_make_ckpt.py "$c" "$work/src-$c"; done
if [ -f "$tf/optimizer.safetensors" ]; then
	mkdir -p "$work/src-transformer" && cp "$tf"/*.safetensors "$work/src-transformer/"
	SETS="transformer $SETS"
fi

rows_p=""; rows_r=""; rows_d=""; same=""
# shellcheck disable=SC2016 # timed's commands are run by sh -c with their own $1 and $2
for c in $SETS; do
	src=$work/src-$c
	bytes=$(cat "$src"/* | wc -c); files=$(ls "$src" | wc -l)
	echo "== $c: $files files, $(mb "$bytes") ($RUNS runs, interleaved: $bins in turns, tar|zstd)"
	for t in tar untar; do : > "$work/$c-$t.txt"; done
	for b in $bins; do for t in put get; do : > "$work/$c-$b-$t.txt"; done; done
	for i in $(seq "$RUNS"); do
		for b in $(order "$i"); do
			d=$work/run-$c-$b; rm -rf "$d"; mkdir -p "$d/ck" && cp -al "$src" "$d/ck/step-1"
			# A link sets the files' ctime, which dates the commit of a directory holding
			# a marker (trainer_state.json): the persist of a checkpoint committed this
			# instant waits RR_PERSIST_SETTLE_MS (1 s) for late files first, by design.
			# Users' checkpoints found at start were committed before it; so here.
			[ ! -e "$src/trainer_state.json" ] || sleep 1.1
			timed "$work/$c-$b-put.txt" '"$1" --store "file://$2/st" --checkpoint-dir "$2/ck" -- true 2> "$2/log"' "$(bin "$b")" "$d"
			timed "$work/$c-$b-get.txt" '"$1" restore --store "file://$2/st" --to "$2/r" 2> /dev/null' "$(bin "$b")" "$d"
		done
		rm -rf "$work/x.tar.zst" "$work/untar"; mkdir -p "$work/untar"
		timed "$work/$c-tar.txt" 'tar -C "$1" -cf - . | zstd -1 -T0 -q -o "$2"' "$src" "$work/x.tar.zst"
		timed "$work/$c-untar.txt" 'zstd -d -T0 -q -c "$1" | tar -x -C "$2"' "$work/x.tar.zst" "$work/untar"
	done
	tar_bytes=$(stat -c %s "$work/x.tar.zst")
	stored=$(find "$work/run-$c-new/st" -type f -path '*/chunks/*' -printf '%s\n' | awk '{s+=$1} END {print s+0}')
	if [ -n "$RR_OLD" ]; then
		# The same objects: chunk names are their SHA-256, manifests equal but for times.
		if diff <(cd "$work/run-$c-old/st" && find . -path '*/chunks/*' -type f | sort) \
			<(cd "$work/run-$c-new/st" && find . -path '*/chunks/*' -type f | sort) > /dev/null &&
			$PY - "$work/run-$c-old/st/default/checkpoints/step-1/manifest.json" \
				"$work/run-$c-new/st/default/checkpoints/step-1/manifest.json" <<'PY'
import json, sys
def load(p):
    m = json.load(open(p))
    def strip(o):
        if isinstance(o, dict):
            return {k: strip(v) for k, v in o.items() if not k.endswith("_unix_ms") and k != "checksum"}
        if isinstance(o, list):
            return [strip(v) for v in o]
        return o
    return strip(m)
sys.exit(0 if load(sys.argv[1]) == load(sys.argv[2]) else 1)
PY
		then same="$same $c: identical;"; else same="$same $c: DIFFERENT;"; fi
	fi
	read -r tar_ms tar_min tar_max < <(cut -d' ' -f1 "$work/$c-tar.txt" | stats)
	read -r untar_ms untar_min untar_max < <(cut -d' ' -f1 "$work/$c-untar.txt" | stats)
	read -r tar_cpu _ _ < <(cut -d' ' -f2 "$work/$c-tar.txt" | stats)
	read -r untar_cpu _ _ < <(cut -d' ' -f2 "$work/$c-untar.txt" | stats)
	for b in $bins; do
		read -r p_ms p_min p_max < <(cut -d' ' -f1 "$work/$c-$b-put.txt" | stats)
		read -r p_cpu p_cpu_min p_cpu_max < <(cut -d' ' -f2 "$work/$c-$b-put.txt" | stats)
		read -r g_ms g_min g_max < <(cut -d' ' -f1 "$work/$c-$b-get.txt" | stats)
		read -r g_cpu _ _ < <(cut -d' ' -f2 "$work/$c-$b-get.txt" | stats)
		# Runs in which the whole persist beat tar|zstd by 4x or more (same run's baseline).
		wins=$(paste -d' ' "$work/$c-$b-put.txt" "$work/$c-tar.txt" | awk '$3 >= 4 * $1 {n++} END {print n+0}')
		# Runs in which restore was at least as fast as this run's persist.
		rwins=$(paste -d' ' "$work/$c-$b-put.txt" "$work/$c-$b-get.txt" | awk '$3 <= $1 {n++} END {print n+0}')
		rows_p="$rows_p| $c | $b | $p_ms ($p_min–$p_max) | $p_cpu ($p_cpu_min–$p_cpu_max) | **$(gbps "$bytes" "$p_ms")** ($(gbps "$bytes" "$p_max")–$(gbps "$bytes" "$p_min")) | $tar_ms ($tar_min–$tar_max), cpu $tar_cpu | $(ratio "$tar_ms" "$p_ms")x | $wins of $RUNS |
"
		rows_r="$rows_r| $c | $b | $g_ms ($g_min–$g_max) | $g_cpu | **$(gbps "$bytes" "$g_ms")** | $(gbps "$bytes" "$p_ms") | $rwins of $RUNS | $untar_ms ($untar_min–$untar_max), cpu $untar_cpu |
"
	done
	rows_s="${rows_s:-}| $c | $files | $bytes | $stored ($(ratio "$bytes" "$stored")x) | $tar_bytes ($(ratio "$bytes" "$tar_bytes")x) |
"
	rm -rf "$work/run-$c-"* "$work/untar" "$work/x.tar.zst"
done

for c in $DISK_SETS; do
	case " $SETS " in *" $c "*) ;; *) continue ;; esac
	src=$work/src-$c; bytes=$(cat "$src"/* | wc -c)
	n=$(( (bytes + 8388607) / 8388608 ))
	echo "== $c: restore to disk ($disk) vs dd of as many bytes"
	d=$work/disk-$c; mkdir -p "$d/ck" && cp -al "$src" "$d/ck/step-1"
	"$RR" --store "file://$d/st" --checkpoint-dir "$d/ck" -- true 2> /dev/null
	: > "$work/$c-dd.txt"; for b in $bins; do : > "$work/$c-$b-disk.txt"; done
	# shellcheck disable=SC2016 # timed's commands are run by sh -c with their own $1..$3
	for i in $(seq "$RUNS"); do
		for b in $(order "$i"); do
			rm -rf "$disk/r"; sync
			timed "$work/$c-$b-disk.txt" '"$1" restore --store "file://$2/st" --to "$3/r" 2> /dev/null && sync' "$(bin "$b")" "$d" "$disk"
		done
		rm -f "$disk/dd"; sync
		timed "$work/$c-dd.txt" 'dd if=/dev/zero of="$1" bs=8M count="$2" conv=fsync status=none' "$disk/dd" "$n"
		rm -f "$disk/dd"
	done
	read -r dd_ms dd_min dd_max < <(cut -d' ' -f1 "$work/$c-dd.txt" | stats)
	for b in $bins; do
		read -r k_ms k_min k_max < <(cut -d' ' -f1 "$work/$c-$b-disk.txt" | stats)
		rows_d="$rows_d| $c | $b | $k_ms ($k_min–$k_max) | **$(gbps "$bytes" "$k_ms")** | $dd_ms ($dd_min–$dd_max) | $(gbps "$((n * 8388608))" "$dd_ms") |
"
	done
	rm -rf "$d" "$disk/r"
done

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
startup=$(RUNS=30 RR=$RR RR_OLD=$RR_OLD scripts/bench_startup.sh)
section=$(cat <<MD
## Speed on real-shaped checkpoints (issue 32)

\`RUNS=$RUNS${RR_OLD:+ RR_OLD=...} scripts/bench_speed.sh\` on $(date -u +%Y-%m-%d): $(nproc) cores ($cpu),
$(uname -sr), load average $(cut -d' ' -f1-3 /proc/loadavg) at the end (the machine may be
shared with other sessions: the load says how much). Every wall time is the median of $RUNS
runs (min–max), each run of resume-run interleaved with its baseline on the same bytes, and
the CPU time (user+sys of the command, from \`wait4\`) is given beside it: it does not
depend on the others' load. "old" is ${RR_OLD_NAME:-the binary before this change}, "new"
the one after, in the same runs, taking turns to go first (old in odd runs, new in even ones),
so that neither always runs right after the other.

Sets (\`scripts/bench_make_ckpt.py KIND DIR\`, deterministic), sizes and what is stored:

| set | files | bytes | resume-run stores (auto) | \`tar \| zstd -1 -T0\` |
|---|---|---|---|---|
${rows_s:-}
Stored objects of old and new compared (chunk names are their SHA-256; manifests equal but
for times):${same:- (no old binary given)}

### Persist: the whole run into a tmpfs file store

\`resume-run --store file:///dev/shm/... --checkpoint-dir DIR -- true\` (start, store lookup,
persist of the checkpoint found, LATEST, ledger, exit) against \`tar -C DIR -cf - . | zstd -1
-T0 -q -o X.tar.zst\` into the same tmpfs, in the same run. GB/s of the set's bytes.

| set | binary | wall ms | CPU ms | GB/s | tar \| zstd -1 -T0 ms | speed-up | runs ≥ 4x |
|---|---|---|---|---|---|---|---|
$rows_p
### Restore into tmpfs

\`resume-run restore --store file:///dev/shm/... --to DIR\` (newest checkpoint: list,
manifest, every chunk's SHA-256, decode, every tensor's hash, write) against \`zstd -d -T0 -c
X.tar.zst | tar -x -C DIR\`.

| set | binary | wall ms | CPU ms | GB/s | persist GB/s (same runs) | runs restore ≥ persist | zstd -d \| tar -x ms |
|---|---|---|---|---|---|---|---|
$rows_r
The large set's restore into tmpfs varies widely from run to run on the 2-core VMs (0.6 to
2.7 s, CPU time with it: the kernel's memory work after 1.4 GB of tar and untar beside it).
Runs with the two binaries' labels swapped (\`RR\` and \`RR_OLD\` exchanged) put the slow
runs on whichever binary was called "new", and back-to-back restores of one store with no
baseline between (5 runs each, 2026-11-27) gave 664 ms for 79373b4's binary and 650 ms for
the next one's: read its row with that spread in mind.

### Restore to disk

The same restore into \`/var/tmp\` (the root disk) followed by \`sync\`, against \`dd
if=/dev/zero bs=8M conv=fsync\` of as many bytes on the same disk, in the same run.

| set | binary | restore + sync ms | GB/s | dd ms | dd GB/s |
|---|---|---|---|---|---|
$rows_d
### The fixed cost of a run

\`RUNS=30${RR_OLD:+ RR_OLD=...} scripts/bench_startup.sh\` in the same sitting: the tiny set's whole
run, wall time per process, against what any process costs here.

$startup
MD
)
if [ -f "$OUT" ] && grep -q '^## Speed on real-shaped checkpoints' "$OUT"; then
	$PY - "$OUT" "$section" <<'PY'
import re, sys
path, new = sys.argv[1], sys.argv[2]
text = open(path).read()
start = text.index("## Speed on real-shaped checkpoints")
m = re.search(r"^## ", text[start + 3:], re.M)
end = start + 3 + m.start() if m else len(text)
open(path, "w").write(text[:start] + new.rstrip("\n") + "\n\n" + text[end:].lstrip("\n"))
PY
else
	printf '\n%s\n' "$section" >> "$OUT"
fi
echo "$section"
