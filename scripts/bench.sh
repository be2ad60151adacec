#!/usr/bin/env bash
# Benchmarks that back the figures in BENCHMARKS.md. Writes BENCHMARKS.md (or $BENCH_OUT).
# Every figure is the median of $RUNS runs (min and max beside it), with its baseline run
# in the same session on the same bytes.
#
# The checkpoint: a 27M-parameter transformer (scripts/train_transformer.py) trained
# $STEPS steps with AdamW on the CPU, model and optimizer state saved as safetensors with the
# trainer helper. It is made once and cached in $BENCH_CACHE (training takes ~20 min here).
#
# BENCH_SECTIONS=encryption runs only the encryption case (scripts/bench_encryption.sh) and
# replaces only its section of BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
RUNS=${RUNS:-5}
STEPS=${STEPS:-30}
CACHE=${BENCH_CACHE:-/var/tmp/resume-run-bench}
OUT=${BENCH_OUT:-$root/BENCHMARKS.md}
scripts/install-deps.sh test
# The torch.save case runs alone when asked (it is also run at the end of the full bench).
if [ "${BENCH_ONLY:-}" = torch ]; then exec scripts/bench_torch.sh; fi
# BENCH_SECTIONS=packs: packs vs aws/rclone on two checkpoints, tmpfs throughput, scale.
if [ "${BENCH_SECTIONS:-all}" = packs ]; then exec scripts/bench_packs.sh; fi
# BENCH_SECTIONS=s3-seaweedfs: resume-run vs aws s3 cp vs rclone on SeaweedFS.
if [ "${BENCH_SECTIONS:-all}" = s3-seaweedfs ]; then exec scripts/bench_s3_seaweedfs.sh; fi
# BENCH_SECTIONS=azure: az:// vs the Azure CLI's upload-batch/download-batch on Azurite.
if [ "${BENCH_SECTIONS:-all}" = azure ]; then exec scripts/bench_azure.sh; fi
# BENCH_SECTIONS=speed: real-shaped sets through whole runs and restores on tmpfs and disk,
# against tar|zstd -1 -T0, zstd -d|tar -x and dd (RR_OLD=binary puts a before beside it).
if [ "${BENCH_SECTIONS:-all}" = speed ]; then exec scripts/bench_speed.sh; fi
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
RR=$root/build/resume-run
PY=/usr/bin/python3
export PYTHONPATH=$root/scripts
export RESUME_RUN_CLOUD=none  # no metadata probes; the notice section sets its own

ckpt=$CACHE/transformer-27m/step-$STEPS
if [ ! -f "$ckpt/optimizer.safetensors" ]; then
	echo "== training the benchmark checkpoint (once; cached in $CACHE)"
	rm -rf "$ckpt.tmp"
	$PY scripts/train_transformer.py --steps "$STEPS" --vocab 8192 --dim 512 --layers 6 --heads 8 \
		--seq 64 --batch 8 --threads "$(nproc)" --lr 1e-3 --save-to "$ckpt.tmp"
	mv "$ckpt.tmp" "$ckpt"
fi
work=$(mktemp -d /dev/shm/rr-bench.XXXXXX)   # tmpfs: the store is not the bottleneck
trap 'rm -rf "$work"' EXIT
cp -r "$ckpt" "$work/src" && ckpt=$work/src  # inputs on tmpfs too, hard-linked per run
files=("$ckpt/model.safetensors" "$ckpt/optimizer.safetensors")
f32_bytes=$(cat "${files[@]}" | wc -c)
cat "${files[@]}" > /dev/null   # both sides read from the page cache

# persist PRECISION RUN: persists the checkpoint into a fresh store with the real agent (it
# persists the newest local checkpoint at start) and prints "<ms> <stored bytes>".
persist() {
	local store=$work/store-$1-$2 cdir=$work/ck-$1-$2
	mkdir -p "$cdir" && cp -al "$ckpt" "$cdir/step-$STEPS"
	"$RR" --precision "$1" --store "file://$store" --checkpoint-dir "$cdir" -- true 2> "$work/log-$1-$2"
	$PY - "$store/default" <<'PY'
import glob, json, sys
ev = json.load(open(glob.glob(sys.argv[1] + "/events/*-checkpoint.json")[0]))
print(ev["elapsed_ms"], ev["stored_bytes"])
PY
}
zstd_run() { # prints "<ms> <bytes>"
	local d=$work/zstd-$1; mkdir -p "$d"
	local t0 t1; t0=$(date +%s%N)
	zstd -1 -T2 -q -f "${files[@]}" --output-dir-flat "$d"
	t1=$(date +%s%N)
	echo "$(( (t1 - t0) / 1000000 )) $(cat "$d"/* | wc -c)"
}

# BENCH_SECTIONS=encryption runs only the encryption case and updates only its section.
. scripts/benchlib.sh # stats, ratio, mb, gbps, mbps, ms_since
. scripts/bench_encryption.sh
if [ "${BENCH_SECTIONS:-all}" = encryption ]; then
	bench_encryption
	exit 0
fi

echo "== encode throughput and size: resume-run persist vs zstd -1 -T2 ($RUNS runs each, interleaved)"
: > "$work/auto.txt"; : > "$work/exact.txt"; : > "$work/zstd.txt"
for i in $(seq "$RUNS"); do
	persist auto "$i" >> "$work/auto.txt"
	persist exact "$i" >> "$work/exact.txt"
	zstd_run "$i" >> "$work/zstd.txt"
done
# The other two lossy modes, for their size (deterministic: one run each).
fp16_bytes=$(persist fp16 1 | cut -d' ' -f2)
bf16_bytes=$(persist bf16 1 | cut -d' ' -f2)
read -r auto_ms auto_min auto_max < <(cut -d' ' -f1 "$work/auto.txt" | stats)
read -r exact_ms exact_min exact_max < <(cut -d' ' -f1 "$work/exact.txt" | stats)
read -r zstd_ms zstd_min zstd_max < <(cut -d' ' -f1 "$work/zstd.txt" | stats)
auto_bytes=$(head -n1 "$work/auto.txt" | cut -d' ' -f2)
exact_bytes=$(head -n1 "$work/exact.txt" | cut -d' ' -f2)
zstd_bytes=$(head -n1 "$work/zstd.txt" | cut -d' ' -f2)
encodings=$(grep -h 'tensors:' "$work/log-auto-1" | sed 's/.*tensors: //' | paste -sd';' -)

echo "== error bound over every value (auto), byte identity (exact)"
"$RR" restore --store "file://$work/store-auto-1" --to "$work/r-auto" > /dev/null 2>&1
bound=$($PY tests/integration/check_tensors.py "$ckpt" "$work/r-auto/step-$STEPS" \
	"$work/store-auto-1/default/checkpoints/step-$STEPS/manifest.json")
"$RR" restore --store "file://$work/store-exact-1" --to "$work/r-exact" > /dev/null 2>&1
cmp "$ckpt/model.safetensors" "$work/r-exact/step-$STEPS/model.safetensors"
cmp "$ckpt/optimizer.safetensors" "$work/r-exact/step-$STEPS/optimizer.safetensors"
per_file=$($PY - "$work/store-auto-1/default/checkpoints/step-$STEPS/manifest.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
for f in m["files"]:
    if f["path"].endswith(".safetensors"):
        st = sum(c["stored_size"] for s in f["segments"] for c in s["chunks"])
        print(f"{f['path']} {f['size'] / st:.2f}x")
PY
)

echo "== incremental: a second checkpoint with 4 of the model's tensors changed"
inc=$work/inc; mkdir -p "$inc/ck"; cp -al "$ckpt" "$inc/ck/step-$STEPS"
"$RR" --store "file://$inc/store" --checkpoint-dir "$inc/ck" -- true 2> "$inc/log1"
mkdir "$inc/ck/.step-next.tmp"
cp "$ckpt/optimizer.safetensors" "$ckpt/state.json" "$inc/ck/.step-next.tmp/"
changed=$($PY - "$ckpt/model.safetensors" "$inc/ck/.step-next.tmp/model.safetensors" <<'PY'
import sys
import resume_run as rr
tensors, meta = rr.load_safetensors_raw(sys.argv[1])
names = [n for n in tensors if n.startswith("blocks.layers.5.")][:4]
nbytes = 0
for n in names:
    dtype, shape, data = tensors[n]
    b = bytearray(data)
    for i in range(0, len(b), 4):  # flip the lowest mantissa bit of every element
        b[i] ^= 1
    tensors[n] = (dtype, shape, bytes(b))
    nbytes += len(b)
rr.save_safetensors_raw(tensors, sys.argv[2], meta)
print(len(names), nbytes)
PY
)
mv "$inc/ck/.step-next.tmp" "$inc/ck/step-$((STEPS + 1))"
"$RR" --store "file://$inc/store" --checkpoint-dir "$inc/ck" -- true 2> "$inc/log2"
inc_line=$($PY - "$inc/store/default" "$((STEPS + 1))" <<'PY'
import glob, json, sys
ev = {e["checkpoint"]: e for e in (json.load(open(p)) for p in glob.glob(sys.argv[1] + "/events/*-checkpoint.json"))}
e = ev[f"step-{sys.argv[2]}"]
print(e["new_bytes"], e["stored_bytes"], e["unchanged_segments"], e["segments"], e["elapsed_ms"])
PY
)
read -r inc_new inc_stored inc_same inc_segs inc_ms <<< "$inc_line"
read -r n_changed changed_bytes <<< "$changed"


echo "== S3: persist and restore vs aws s3 cp --recursive, same files, same S3 test server"
# The server: @20minutes/s3rver (Node) on 127.0.0.1, its data on tmpfs, verifying SigV4.
tests/s3/install-s3rver.sh
s3port=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$work/s3data"
node --openssl-legacy-provider tests/s3/s3rver.js "$s3port" "$work/s3data" bench > "$work/s3rver.log" 2>&1 &
s3pid=$!
trap 'kill $s3pid 2>/dev/null || true; rm -rf "$work"' EXIT
for _ in $(seq 100); do grep -q '^ready' "$work/s3rver.log" && break; sleep 0.1; done
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1 \
	AWS_ENDPOINT_URL=http://127.0.0.1:$s3port AWS_EC2_METADATA_DISABLED=true AWS_PAGER="" \
	RESUME_RUN_CLOUD=none
# Debian's AWS CLI v2 (a pip-installed one earlier on PATH would be another program);
# it predates AWS_ENDPOINT_URL, so the endpoint is given explicitly.
AWS="/usr/bin/aws --endpoint-url $AWS_ENDPOINT_URL"
# Debian's rclone, configured from the environment; AWS_CA_BUNDLE (set on some machines)
# makes its S3 client refuse a plain-HTTP endpoint.
unset AWS_CA_BUNDLE
export RCLONE_CONFIG_S3_TYPE=s3 RCLONE_CONFIG_S3_PROVIDER=Other RCLONE_CONFIG_S3_REGION=us-east-1 \
	RCLONE_CONFIG_S3_ENDPOINT=$AWS_ENDPOINT_URL RCLONE_CONFIG_S3_ACCESS_KEY_ID=S3RVER \
	RCLONE_CONFIG_S3_SECRET_ACCESS_KEY=S3RVER RCLONE_CONFIG_S3_FORCE_PATH_STYLE=true
RCLONE="rclone --config /dev/null -q"
: > "$work/s3-rr-put.txt"; : > "$work/s3-aws-put.txt"; : > "$work/s3-rr-get.txt"
: > "$work/s3-aws-get.txt"; : > "$work/s3-rr-rss.txt"
: > "$work/s3-rclone-put.txt"; : > "$work/s3-rclone-get.txt"
s3dir=$work/s3files; mkdir -p "$s3dir"; cp -al "$ckpt"/* "$s3dir/"
s3_bytes=$(cat "$s3dir"/* | wc -c)
for i in $(seq "$RUNS"); do
	# resume-run: the whole command (start, probe, persist, LATEST, ledger), wall clock and
	# peak RSS; the ledger's elapsed_ms is the persist alone.
	cdir=$work/s3ck-$i; mkdir -p "$cdir" && cp -al "$s3dir" "$cdir/step-$STEPS"
	t0=$(date +%s%N)
	/usr/bin/time -f '%M' -o "$work/rss-$i" "$RR" --store "s3://bench/rr-$i" --checkpoint-dir "$cdir" -- true 2> "$work/s3log-$i"
	ms_since "$t0" >> "$work/s3-rr-put.txt"
	cat "$work/rss-$i" >> "$work/s3-rr-rss.txt"
	t0=$(date +%s%N)
	$AWS s3 cp --quiet --recursive "$s3dir" "s3://bench/aws-$i/"
	ms_since "$t0" >> "$work/s3-aws-put.txt"
	t0=$(date +%s%N)
	"$RR" restore --store "s3://bench/rr-$i" --to "$work/s3r-$i" 2> /dev/null
	ms_since "$t0" >> "$work/s3-rr-get.txt"
	t0=$(date +%s%N)
	$AWS s3 cp --quiet --recursive "s3://bench/aws-$i/" "$work/s3a-$i"
	ms_since "$t0" >> "$work/s3-aws-get.txt"
	t0=$(date +%s%N)
	$RCLONE copy "$s3dir" "s3:bench/rclone-$i/"
	ms_since "$t0" >> "$work/s3-rclone-put.txt"
	t0=$(date +%s%N)
	$RCLONE copy "s3:bench/rclone-$i/" "$work/s3c-$i"
	ms_since "$t0" >> "$work/s3-rclone-get.txt"
	cmp "$work/s3a-$i/optimizer.safetensors" "$s3dir/optimizer.safetensors"
	cmp "$work/s3c-$i/optimizer.safetensors" "$s3dir/optimizer.safetensors"
	rm -rf "$work/s3r-$i" "$work/s3a-$i" "$work/s3c-$i" "$cdir"
done
read -r s3_rr_put s3_rr_put_min s3_rr_put_max < <(stats < "$work/s3-rr-put.txt")
read -r s3_aws_put s3_aws_put_min s3_aws_put_max < <(stats < "$work/s3-aws-put.txt")
read -r s3_rr_get s3_rr_get_min s3_rr_get_max < <(stats < "$work/s3-rr-get.txt")
read -r s3_aws_get s3_aws_get_min s3_aws_get_max < <(stats < "$work/s3-aws-get.txt")
read -r s3_rss s3_rss_min s3_rss_max < <(stats < "$work/s3-rr-rss.txt")
read -r s3_rc_put s3_rc_put_min s3_rc_put_max < <(stats < "$work/s3-rclone-put.txt")
read -r s3_rc_get s3_rc_get_min s3_rc_get_max < <(stats < "$work/s3-rclone-get.txt")
s3_rr_stored=$(find "$work/s3data/bench/rr-1" -type f -name '*object' -printf '%s\n' 2>/dev/null | awk '{s+=$1} END {print s+0}')
kill $s3pid 2>/dev/null || true

echo "== cloud notices: detection latency per cloud, idle cost while watching"
notices=$($PY scripts/bench_notices.py "$RR" "$RUNS")

kern=$(build/kernels_bench 2>/dev/null || echo "(build/kernels_bench not built)")

cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')
cat > "$OUT" <<MD
# Benchmarks

Produced by \`scripts/bench.sh\` (RUNS=$RUNS) on $(date -u +%Y-%m-%d): $(nproc) cores ($cpu),
$(free -g | awk '/Mem:/ {print $2}') GiB, $(uname -sr). Every time is the median of $RUNS runs (min–max), each
figure beside its baseline from the same session on the same bytes. Stores are on tmpfs
(\`/dev/shm\`), inputs in the page cache, so the figures are about the encoder, not the disk.

## The checkpoint

A 27M-parameter GPT-style transformer (\`scripts/train_transformer.py --vocab 8192 --dim 512
--layers 6\`), trained $STEPS steps with AdamW on the CPU (Debian's python3-torch), model and
optimizer state saved as safetensors by \`scripts/resume_run.py\`: $(mb "$f32_bytes") of F32
(model $(mb "$(stat -c %s "$ckpt/model.safetensors")"), optimizer $(mb "$(stat -c %s "$ckpt/optimizer.safetensors")")).

## Size

| stored as | bytes | vs F32 files | vs zstd -1 |
|---|---|---|---|
| F32 files | $f32_bytes | 1.00x | |
| \`zstd -1 -T2\` | $zstd_bytes | $(ratio "$f32_bytes" "$zstd_bytes")x | 1.00x |
| resume-run \`--precision exact\` | $exact_bytes | $(ratio "$f32_bytes" "$exact_bytes")x | $(ratio "$zstd_bytes" "$exact_bytes")x |
| resume-run \`--precision bf16\` | $bf16_bytes | $(ratio "$f32_bytes" "$bf16_bytes")x | $(ratio "$zstd_bytes" "$bf16_bytes")x |
| resume-run \`--precision fp16\` (scaled) | $fp16_bytes | $(ratio "$f32_bytes" "$fp16_bytes")x | $(ratio "$zstd_bytes" "$fp16_bytes")x |
| resume-run \`--precision auto\` | $auto_bytes | **$(ratio "$f32_bytes" "$auto_bytes")x** | $(ratio "$zstd_bytes" "$auto_bytes")x |

- \`auto\` per file: $(echo "$per_file" | paste -sd';' - | sed 's/;/; /g'). Encodings chosen: $encodings.
- \`auto\`, every value checked after a restore (\`tests/integration/check_tensors.py\`): $bound.
- \`exact\` restores byte-identical files (\`cmp\` of both files after \`resume-run restore\`).

## Encode throughput

Persist of the whole checkpoint into a fresh store (read, parse, hash, convert, shuffle,
compress, sha256, write; \`elapsed_ms\` of the ledger's checkpoint event), GB/s of F32 input,
against \`zstd -1 -T2\` on the same two files:

| | time | GB/s of F32 input | bytes written |
|---|---|---|---|
| \`zstd -1 -T2 -q FILES --output-dir-flat DIR\` | $zstd_ms ms ($zstd_min–$zstd_max) | $(gbps "$f32_bytes" "$zstd_ms") | $zstd_bytes |
| resume-run \`--precision exact\` | $exact_ms ms ($exact_min–$exact_max) | $(gbps "$f32_bytes" "$exact_ms") | $exact_bytes |
| resume-run \`--precision auto\` | $auto_ms ms ($auto_min–$auto_max) | **$(gbps "$f32_bytes" "$auto_ms")** | $auto_bytes ($(awk -v a="$auto_bytes" -v z="$zstd_bytes" 'BEGIN { printf "%.0f%%", 100 * a / z }') of zstd's) |

\`auto\` is $(ratio "$zstd_ms" "$auto_ms")x the speed of \`zstd -1 -T2\` while writing $(awk -v a="$auto_bytes" -v z="$zstd_bytes" 'BEGIN { printf "%.0f%%", 100 * a / z }') of its bytes.

## Incremental checkpoint

The same checkpoint again with $n_changed of the model's tensors changed ($(mb "$changed_bytes") of F32):
$inc_same of $inc_segs segments unchanged, **$(mb "$inc_new") written** (the changed tensors'
chunks and the manifest) of $(mb "$inc_stored") the checkpoint occupies, in $inc_ms ms.

## S3: persist and restore against the same server

The same checkpoint directory ($(mb "$s3_bytes")) to and from \`@20minutes/s3rver\` 5.0.0 on
127.0.0.1 (it verifies every SigV4 signature; its data on tmpfs), each tool started from
scratch per run (wall clock of the whole command). The server is a Node program on the
same 2 cores as the client, so these are figures for this setup, not for AWS.

| | resume-run | \`aws s3 cp --recursive\` (awscli $(/usr/bin/aws --version 2>&1 | cut -d' ' -f1 | cut -d/ -f2)) | ratio | \`rclone copy\` ($(rclone --version 2>/dev/null | head -1 | cut -d' ' -f2)) | ratio |
|---|---|---|---|---|---|
| persist (to durable) | $s3_rr_put ms ($s3_rr_put_min–$s3_rr_put_max) | $s3_aws_put ms ($s3_aws_put_min–$s3_aws_put_max) | **$(ratio "$s3_aws_put" "$s3_rr_put")x** | $s3_rc_put ms ($s3_rc_put_min–$s3_rc_put_max) | **$(ratio "$s3_rc_put" "$s3_rr_put")x** |
| restore (download) | $s3_rr_get ms ($s3_rr_get_min–$s3_rr_get_max) | $s3_aws_get ms ($s3_aws_get_min–$s3_aws_get_max) | **$(ratio "$s3_aws_get" "$s3_rr_get")x** | $s3_rc_get ms ($s3_rc_get_min–$s3_rc_get_max) | **$(ratio "$s3_rc_get" "$s3_rr_get")x** |
| bytes sent | $(mb "$s3_rr_stored") | $(mb "$s3_bytes") | | $(mb "$s3_bytes") | |

- Commands: \`resume-run --store s3://bench/rr-N --checkpoint-dir DIR -- true\` (persists the
  newest local checkpoint at start: probe, encode, upload, manifest, LATEST, ledger) and
  \`resume-run restore --store s3://bench/rr-N --to DIR\`, against \`aws s3 cp --quiet
  --recursive DIR s3://bench/aws-N/\` and back, and \`rclone copy DIR s3:bench/rclone-N/\`
  and back (rclone configured from the environment).
- Agent peak RSS during the persist (\`/usr/bin/time -f %M\`): $(awk -v k="$s3_rss" 'BEGIN { printf "%.0f MB", k / 1024 }') (median; $(awk -v k="$s3_rss_min" 'BEGIN { printf "%.0f", k / 1024 }')–$(awk -v k="$s3_rss_max" 'BEGIN { printf "%.0f", k / 1024 }') MB).

## Cloud notices

The project's metadata test server (\`tests/metadata/server.py\`, built from the clouds'
metadata documentation) announces a preemption at a random point of the poll cycle while the agent
supervises a trainer that uses the Python helper; latency is from the moment the server
serves the announcement to the agent's log line (JSON timestamps) saying it signalled the
trainer. Defaults: AWS polls every 2 s, Azure every 1 s, GCP waits on hanging GETs.
Command: \`scripts/bench_notices.py build/resume-run $RUNS\`.

$notices

## Kernels (one core, \`build/kernels_bench\`)

\`\`\`
$kern
\`\`\`
MD
scripts/bench_torch.sh > /dev/null  # adds its section to $OUT
bench_encryption > /dev/null
scripts/bench_packs.sh > /dev/null  # replaces its section of $OUT
scripts/bench_s3_seaweedfs.sh > /dev/null  # replaces its section of $OUT
scripts/bench_azure.sh > /dev/null  # the same for Azure Blob Storage (needs the checkpoint above)
scripts/bench_speed.sh > /dev/null  # real-shaped sets, whole runs and restores (issue 32)
echo "== wrote $OUT"
cat "$OUT"
