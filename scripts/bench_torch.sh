#!/usr/bin/env bash
# The torch.save case of the benchmarks (docs/how-it-works.md, "What is stored"): an
# HF-Trainer-shaped checkpoint of the bench's transformer (model.safetensors, optimizer.pt,
# scheduler.pt, rng_state.pth, trainer_state.json) plus a Lightning-shaped lightning.ckpt, all
# made by real torch.save (scripts/torch_checkpoint.py), persisted under --precision auto side
# by side with the same tensors written as safetensors; medians of $RUNS interleaved runs. Then
# one restore, checked value by value, with torch.load and zipfile's CRC check
# (tests/integration/check_tensors.py).
#
# Runs alone (`BENCH_ONLY=torch scripts/bench.sh` or this script) and replaces the section
# "## torch.save checkpoints" of $BENCH_OUT (BENCHMARKS.md), or adds it at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
RUNS=${RUNS:-5}
TORCH_STEPS=${TORCH_STEPS:-3}
CACHE=${BENCH_CACHE:-/var/tmp/resume-run-bench}
OUT=${BENCH_OUT:-$root/BENCHMARKS.md}
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
RR=$root/build/resume-run
PY=/usr/bin/python3
export PYTHONPATH=$root/scripts
export RESUME_RUN_CLOUD=none
MODEL=(--vocab 8192 --dim 512 --layers 6 --heads 8 --seq 64 --batch 8)

src=$CACHE/torch-27m/step-$TORCH_STEPS
if [ ! -f "$src/torch/lightning.ckpt" ]; then
	echo "== training and saving the torch.save checkpoint (once; cached in $CACHE)"
	rm -rf "$src.tmp"
	$PY scripts/torch_checkpoint.py --out "$src.tmp" --layout both --steps "$TORCH_STEPS" \
		"${MODEL[@]}" --threads "$(nproc)"
	mkdir -p "$(dirname "$src")" && mv "$src.tmp" "$src"
fi
work=$(mktemp -d /dev/shm/resume-run-bench-torch.XXXXXX)   # tmpfs: the store is not the bottleneck
trap 'rm -rf "$work"' EXIT
cp -r "$src" "$work/src"
cat "$work"/src/*/* > /dev/null

# persist LAYOUT RUN: prints "<ms> <stored bytes> <input bytes>"
persist() {
	local store=$work/store-$1-$2 cdir=$work/ck-$1-$2
	mkdir -p "$cdir" && cp -al "$work/src/$1" "$cdir/step-$TORCH_STEPS"
	"$RR" --store "file://$store" --checkpoint-dir "$cdir" -- true 2> "$work/log-$1-$2" ||
		{ cat "$work/log-$1-$2" >&2; return 1; }
	$PY - "$store/default" <<'PY'
import glob, json, sys
ev = json.load(open(glob.glob(sys.argv[1] + "/events/*-checkpoint.json")[0]))
m = json.load(open(glob.glob(sys.argv[1] + "/checkpoints/*/manifest.json")[0]))
print(ev["elapsed_ms"], ev["stored_bytes"], sum(f["size"] for f in m["files"]))
PY
}
. "$(dirname "$0")/benchlib.sh" # stats, ratio, gbps

echo "== torch.save vs safetensors, --precision auto ($RUNS runs each, interleaved)"
: > "$work/torch.txt"; : > "$work/st.txt"
for i in $(seq "$RUNS"); do
	persist torch "$i" >> "$work/torch.txt"
	persist safetensors "$i" >> "$work/st.txt"
done
read -r t_ms t_min t_max < <(cut -d' ' -f1 "$work/torch.txt" | stats)
read -r s_ms s_min s_max < <(cut -d' ' -f1 "$work/st.txt" | stats)
read -r _ t_stored t_in < "$work/torch.txt"
read -r _ s_stored s_in < "$work/st.txt"
t_enc=$(grep -h 'tensors:' "$work/log-torch-1" | sed 's/.*tensors: //')
per_file=$($PY - "$work/store-torch-1/default" <<'PY'
import glob, json, sys
m = json.load(open(glob.glob(sys.argv[1] + "/checkpoints/*/manifest.json")[0]))
for f in sorted(m["files"], key=lambda f: -f["size"]):
    st = sum(c["stored_size"] for s in f["segments"] for c in s["chunks"])
    print(f"{f['path']} {f['size'] / 1e6:.1f} MB {f['size'] / st:.2f}x")
PY
)

# Before: torch.save files were plain bytes (zstd level 3), model.safetensors as now.
before=$($PY - "$work/store-torch-1/default" "$work/src/torch" <<'PY'
import glob, json, os, subprocess, sys
m = json.load(open(glob.glob(sys.argv[1] + "/checkpoints/*/manifest.json")[0]))
total = 0
for f in m["files"]:
    if f["path"].endswith(".safetensors"):
        total += sum(c["stored_size"] for s in f["segments"] for c in s["chunks"])
    else:
        out = subprocess.run(["zstd", "-3", "-q", "-c", os.path.join(sys.argv[2], f["path"])],
                             check=True, capture_output=True).stdout
        total += len(out)
print(total)
PY
)

echo "== restore (auto) checked value by value, torch.load, testzip"
"$RR" restore --store "file://$work/store-torch-1" --to "$work/r" > /dev/null 2>&1
check=$($PY tests/integration/check_tensors.py "$work/src/torch" "$work/r/step-$TORCH_STEPS" \
	"$(ls "$work"/store-torch-1/default/checkpoints/*/manifest.json)")

check_md="- After a restore, ${check//$'\n'/$'\n'- After a restore, }"
section=$(cat <<MD
## torch.save checkpoints

\`BENCH_ONLY=torch scripts/bench.sh\` (RUNS=$RUNS, $(date -u +%Y-%m-%d), $(nproc) cores): the bench's
transformer (\`scripts/torch_checkpoint.py ${MODEL[*]} --steps $TORCH_STEPS\`, AdamW + StepLR)
saved as an HF-Trainer checkpoint (model.safetensors, optimizer.pt, scheduler.pt, rng_state.pth,
trainer_state.json) plus a Lightning-shaped lightning.ckpt (model, optimizer_states,
lr_schedulers, callbacks, one step later), all by real \`torch.save\`; beside it the same tensors
written as safetensors (\`--layout safetensors\`). \`--precision auto\`, fresh store on tmpfs,
median of $RUNS interleaved runs (min–max). The machine was shared with other jobs
($(cut -d' ' -f1 /proc/loadavg) load average at the end): compare the two rows with each other.

| checkpoint | input | stored | ratio | persist time | GB/s of input |
|---|---|---|---|---|---|
| torch.save files, before (read as plain bytes: zstd -3) | $t_in | $before | $(ratio "$t_in" "$before")x | | |
| torch.save files | $t_in | $t_stored | **$(ratio "$t_in" "$t_stored")x** | $t_ms ms ($t_min–$t_max) | $(gbps "$t_in" "$t_ms") |
| same tensors as safetensors | $s_in | $s_stored | $(ratio "$s_in" "$s_stored")x | $s_ms ms ($s_min–$s_max) | $(gbps "$s_in" "$s_ms") |

- Per file (torch.save layout): $(echo "$per_file" | paste -sd';' - | sed 's/;/; /g').
- Encodings chosen: $t_enc.
$check_md
- "Before" is what this checkpoint took when only \`*.safetensors\` files were read tensor by
  tensor: model.safetensors as above, every torch.save file as zstd (level 3) of its bytes
  (issue 15 measured 1.45x on a smaller checkpoint of the same shape).
MD
)
if [ -f "$OUT" ] && grep -q '^## torch.save checkpoints' "$OUT"; then
	$PY - "$OUT" "$section" <<'PY'
import sys
path, section = sys.argv[1], sys.argv[2]
text = open(path).read()
start = text.index("## torch.save checkpoints")
end = text.find("\n## ", start + 1)
tail = text[end + 1:] if end >= 0 else ""
open(path, "w").write(text[:start] + section + "\n" + ("\n" + tail if tail else ""))
PY
else
	printf '\n%s\n' "$section" >> "$OUT"
fi
echo "$section"
