#!/usr/bin/env bash
# Packs and scale, run alone with BENCH_SECTIONS=packs scripts/bench.sh (or this script
# directly) and at the end of the full bench. Writes (or replaces) the "## Packs and scale"
# section of $BENCH_OUT (default BENCHMARKS.md).
#
# Checkpoints (scripts/bench_make_ckpt.py, deterministic): "mixed", 4 safetensors files,
# ~125 MB of F32 in ~316 tensors; "smalls", 400 tensors under 64 kB. Each goes to and from
# @20minutes/s3rver on 127.0.0.1 with resume-run, `aws s3 cp --recursive` and `rclone copy`,
# runs interleaved, medians of $RUNS. Then throughput into a tmpfs file store, and the scale
# case: $SCALE_GB GB through s3rver with the agent's peak RSS, and a 2 GB file-store persist
# and restore.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
RUNS=${RUNS:-5}
SCALE_GB=${SCALE_GB:-4}
OUT=${BENCH_OUT:-$root/BENCHMARKS.md}
RR=$root/build/resume-run
PY=/usr/bin/python3
export PYTHONPATH=$root/scripts RESUME_RUN_CLOUD=none
[ -x "$RR" ] || { cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null; cmake --build build -j2 >/dev/null; }
work=$(mktemp -d /dev/shm/rr-bench-packs.XXXXXX)
big=$(mktemp -d /var/tmp/rr-bench-scale.XXXXXX) # the scale case on disk: tmpfs is RAM
s3pid=
trap 'kill $s3pid 2>/dev/null || true; rm -rf "$work" "$big"' EXIT
. "$(dirname "$0")/benchlib.sh" # stats, ratio, mb, gbps, mbps, ms_since
gbps() { awk -v b="$1" -v ms="$2" 'BEGIN { printf "%.2f", b / ms / 1e6 }'; }
objects() { find "$1" -type f -name '*object' | wc -l; } # s3rver: one "*object" file per key

for c in mixed smalls; do $PY scripts/bench_make_ckpt.py "$c" "$work/$c"; done
cases="mixed smalls"
# The full bench's transformer checkpoint (scripts/bench.sh trains it once), when cached.
STEPS=${STEPS:-30}
tf=${BENCH_CACHE:-/var/tmp/resume-run-bench}/transformer-27m/step-$STEPS
if [ -f "$tf/optimizer.safetensors" ]; then
	mkdir -p "$work/transformer" && cp "$tf"/*.safetensors "$work/transformer/"
	cases="transformer $cases"
fi
tput_cases="${cases%% *}"
case $tput_cases in mixed) ;; *) tput_cases="$tput_cases mixed" ;; esac

echo "== s3rver"
tests/s3/install-s3rver.sh >/dev/null
s3port=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$work/s3data" "$big/s3data"
node --openssl-legacy-provider tests/s3/s3rver.js "$s3port" "$work/s3data" bench > "$work/s3rver.log" 2>&1 &
s3pid=$!
for _ in $(seq 100); do grep -q '^ready' "$work/s3rver.log" && break; sleep 0.1; done
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1 \
	AWS_ENDPOINT_URL=http://127.0.0.1:$s3port AWS_EC2_METADATA_DISABLED=true AWS_PAGER=
AWS="/usr/bin/aws --endpoint-url $AWS_ENDPOINT_URL"
unset AWS_CA_BUNDLE
export RCLONE_CONFIG_S3_TYPE=s3 RCLONE_CONFIG_S3_PROVIDER=Other RCLONE_CONFIG_S3_REGION=us-east-1 \
	RCLONE_CONFIG_S3_ENDPOINT=$AWS_ENDPOINT_URL RCLONE_CONFIG_S3_ACCESS_KEY_ID=S3RVER \
	RCLONE_CONFIG_S3_SECRET_ACCESS_KEY=S3RVER RCLONE_CONFIG_S3_FORCE_PATH_STYLE=true
RCLONE="rclone --config /dev/null -q"

rows=""
for c in $cases; do
	echo "== $c: resume-run vs aws s3 cp vs rclone ($RUNS runs, interleaved)"
	src=$work/$c; bytes=$(cat "$src"/* | wc -c)
	ntensors=$($PY -c 'import json,struct,sys,glob
n=0
for p in glob.glob(sys.argv[1]+"/*.safetensors"):
    f=open(p,"rb"); h=json.loads(f.read(struct.unpack("<Q",f.read(8))[0])); n+=len([k for k in h if k!="__metadata__"])
print(n)' "$src")
	for t in rr-put aws-put rc-put rr-get aws-get rc-get; do : > "$work/$c-$t.txt"; done
	for i in $(seq "$RUNS"); do
		cdir=$work/ck-$c-$i; mkdir -p "$cdir" && cp -al "$src" "$cdir/step-1"
		t0=$(date +%s%N); "$RR" --store "s3://bench/$c-rr-$i" --checkpoint-dir "$cdir" -- true 2> "$work/log-$c-$i"
		ms_since "$t0" >> "$work/$c-rr-put.txt"
		t0=$(date +%s%N); $AWS s3 cp --quiet --recursive "$src" "s3://bench/$c-aws-$i/"
		ms_since "$t0" >> "$work/$c-aws-put.txt"
		t0=$(date +%s%N); $RCLONE copy "$src" "s3:bench/$c-rc-$i/"
		ms_since "$t0" >> "$work/$c-rc-put.txt"
		t0=$(date +%s%N); "$RR" restore --store "s3://bench/$c-rr-$i" --to "$work/r-$c-$i" 2> /dev/null
		ms_since "$t0" >> "$work/$c-rr-get.txt"
		t0=$(date +%s%N); $AWS s3 cp --quiet --recursive "s3://bench/$c-aws-$i/" "$work/a-$c-$i"
		ms_since "$t0" >> "$work/$c-aws-get.txt"
		t0=$(date +%s%N); $RCLONE copy "s3:bench/$c-rc-$i/" "$work/c-$c-$i"
		ms_since "$t0" >> "$work/$c-rc-get.txt"
		[ "$i" = 1 ] && nobj=$(objects "$work/s3data/bench/$c-rr-1/default/chunks")
		rm -rf "$cdir" "$work/r-$c-$i" "$work/a-$c-$i" "$work/c-$c-$i"
	done
	for t in rr-put aws-put rc-put rr-get aws-get rc-get; do
		read -r m lo hi < <(stats < "$work/$c-$t.txt"); eval "m_${t//-/_}=$m r_${t//-/_}='$lo–$hi'"
	done
	# shellcheck disable=SC2154 # m_* and r_* are set by the eval above
	rows+="| $c: $ntensors tensors, $(mb "$bytes"), **$nobj objects** | persist | $m_rr_put ms ($r_rr_put) | $m_aws_put ms ($r_aws_put) | **$(ratio "$m_aws_put" "$m_rr_put")x** | $m_rc_put ms ($r_rc_put) | **$(ratio "$m_rc_put" "$m_rr_put")x** |
| | restore | $m_rr_get ms ($r_rr_get) | $m_aws_get ms ($r_aws_get) | **$(ratio "$m_aws_get" "$m_rr_get")x** | $m_rc_get ms ($r_rc_get) | **$(ratio "$m_rc_get" "$m_rr_get")x** |
"
done

echo "== incremental with packs: one small tensor of smalls changed"
inc=$work/inc; mkdir -p "$inc/ck"; cp -al "$work/smalls" "$inc/ck/step-1"
"$RR" --store "file://$inc/store" --checkpoint-dir "$inc/ck" -- true 2> "$inc/log1"
mkdir "$inc/ck/.next.tmp"
$PY - "$work/smalls/model.safetensors" "$inc/ck/.next.tmp/model.safetensors" <<'PY'
import sys
import resume_run as rr
t, meta = rr.load_safetensors_raw(sys.argv[1])
d, s, b = t["blocks.100.ln.weight"]
t["blocks.100.ln.weight"] = (d, s, bytes(x ^ 1 if i % 4 == 0 else x for i, x in enumerate(b)))
rr.save_safetensors_raw(t, sys.argv[2], meta)
PY
mv "$inc/ck/.next.tmp" "$inc/ck/step-2"
"$RR" --store "file://$inc/store" --checkpoint-dir "$inc/ck" -- true 2> "$inc/log2"
inc_line=$(grep -h 'persisted step-2' "$inc/log2" | sed 's/.*persisted step-2: //')

echo "== F32 through a whole run into a tmpfs file store (exact, auto; zstd -1 -T0 alongside)"
fs_rows=""
for c in $tput_cases; do
	fbytes_c=$(cat "$work/$c"/* | wc -c)
	for p in auto exact; do : > "$work/fs-$c-$p.txt"; done
	: > "$work/fs-$c-zstd.txt"
	for i in $(seq "$RUNS"); do
		for p in auto exact; do
			cdir=$work/fsck-$p-$i; mkdir -p "$cdir" && cp -al "$work/$c" "$cdir/step-1"
			t0=$(date +%s%N); "$RR" --precision "$p" --store "file://$work/fs-$p-$i" --checkpoint-dir "$cdir" -- true 2> /dev/null
			ms_since "$t0" >> "$work/fs-$c-$p.txt"
			rm -rf "$cdir" "$work/fs-$p-$i"
		done
		# The baseline: the same files through zstd -1 on every core into the same tmpfs.
		t0=$(date +%s%N); tar -C "$work/$c" -cf - . | zstd -q -1 -T0 -o "$work/fs-baseline.tar.zst"
		ms_since "$t0" >> "$work/fs-$c-zstd.txt"
		rm -f "$work/fs-baseline.tar.zst"
	done
	for p in auto exact zstd; do
		read -r m lo hi < <(stats < "$work/fs-$c-$p.txt")
		case $p in zstd) what="\`tar \\| zstd -1 -T0\` (baseline)" ;; *) what="resume-run \`--precision $p\`" ;; esac
		fs_rows+="| $c, $(mb "$fbytes_c") | $what | $m ms ($lo–$hi) | **$(gbps "$fbytes_c" "$m") GB/s** |
"
	done
done

echo "== scale: $SCALE_GB GB through s3rver (peak RSS), 2 GB through a file store"
kill $s3pid; wait $s3pid 2>/dev/null || true
node --openssl-legacy-provider tests/s3/s3rver.js "$s3port" "$big/s3data" bench > "$big/s3rver.log" 2>&1 &
s3pid=$!
for _ in $(seq 100); do grep -q '^ready' "$big/s3rver.log" && break; sleep 0.1; done
SIZE_GB=$SCALE_GB $PY scripts/bench_make_ckpt.py scale "$big/ck/step-1"
sbytes=$(cat "$big"/ck/step-1/* | wc -c)
t0=$(date +%s%N)
/usr/bin/time -v -o "$big/put.time" "$RR" --store "s3://bench/scale" --checkpoint-dir "$big/ck" -- true 2> "$big/put.log"
s_put=$(ms_since "$t0")
t0=$(date +%s%N)
/usr/bin/time -v -o "$big/get.time" "$RR" restore --store "s3://bench/scale" --to "$big/r" 2> "$big/get.log"
s_get=$(ms_since "$t0")
rm -rf "$big/r"
# The same restore into tmpfs: what the disk's write speed takes from the figure above.
t0=$(date +%s%N)
"$RR" restore --store "s3://bench/scale" --to "$work/scale-r" 2> /dev/null
s_get_shm=$(ms_since "$t0")
rm -rf "$work/scale-r"
rss() { awk -F': ' '/Maximum resident/ { printf "%.0f MB", $2 / 1024 }' "$1"; }
s_put_rss=$(rss "$big/put.time"); s_get_rss=$(rss "$big/get.time")
s_stored=$(grep -h 'persisted step-1' "$big/put.log" | sed 's/.*persisted step-1: //')
rm -rf "$big/r" "$big/s3data"
kill $s3pid; wait $s3pid 2>/dev/null || true; s3pid=
# 2 GB into a file store on disk and back.
rm -rf "$big/ck/step-1"/shard-[2-9]* "$big/ck/step-1"/shard-[1-9][0-9]*
fbytes=$(cat "$big"/ck/step-1/* | wc -c)
t0=$(date +%s%N)
/usr/bin/time -v -o "$big/fput.time" "$RR" --store "file://$big/fstore" --checkpoint-dir "$big/ck" -- true 2> "$big/fput.log"
f_put=$(ms_since "$t0")
t0=$(date +%s%N)
/usr/bin/time -v -o "$big/fget.time" "$RR" restore --store "file://$big/fstore" --to "$big/fr" 2> "$big/fget.log"
f_get=$(ms_since "$t0")
f_put_rss=$(rss "$big/fput.time"); f_get_rss=$(rss "$big/fget.time")

section=$(cat <<MD
## Packs and scale

Produced by \`BENCH_SECTIONS=packs scripts/bench.sh\` (\`scripts/bench_packs.sh\`, RUNS=$RUNS) on
$(date -u +%Y-%m-%d), $(nproc) cores shared with other work. Checkpoints from
\`scripts/bench_make_ckpt.py\` and, when cached, **transformer** (the full bench's 27M-parameter
model and AdamW state); **mixed**, 4 safetensors files of F32 (two 14 MB matrices and
76 tensors of 1–128 kB each); **smalls**, one file of 400 tensors of 1–64 kB (LayerNorm
weights and biases). Against \`@20minutes/s3rver\` 5.0.0 on 127.0.0.1 (data on tmpfs), each tool
started from scratch per run, runs interleaved, medians (min–max). Small chunks share packs
of up to 8 MiB, so a checkpoint is a few objects, not one per tensor.

| checkpoint | | resume-run | \`aws s3 cp --recursive\` | ratio | \`rclone copy\` | ratio |
|---|---|---|---|---|---|---|
$rows
- Incremental with packs: smalls again with one 16 kB tensor changed: $inc_line.
- A whole run (\`resume-run --store file:///dev/shm/... -- true\`: start, persist, LATEST,
  ledger) into a tmpfs file store, GB/s of F32 input, with \`tar | zstd -1 -T0\` of the same
  files into the same tmpfs alongside:

| checkpoint | | time | F32 throughput |
|---|---|---|---|
$fs_rows
- Scale, $(mb "$sbytes") of F32 (${SCALE_GB} files of 16 tensors of 64 MB) through s3rver (data
  on disk): persist $s_put ms ($(gbps "$sbytes" "$s_put") GB/s; $s_stored), agent peak RSS
  **$s_put_rss**; restore $s_get ms ($(gbps "$sbytes" "$s_get") GB/s), peak RSS **$s_get_rss**
  (\`/usr/bin/time -v\`); the same restore into tmpfs $s_get_shm ms
  ($(gbps "$sbytes" "$s_get_shm") GB/s).
- $(mb "$fbytes") into a file store on disk: persist $f_put ms (peak RSS $f_put_rss), restore
  $f_get ms (peak RSS $f_get_rss).
MD
)
if [ -f "$OUT" ] && grep -q '^## Packs and scale' "$OUT"; then
	$PY - "$OUT" "$section" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
text = re.sub(r"## Packs and scale\n.*?(?=\n## |\Z)", lambda m: sys.argv[2] + "\n", text, flags=re.S)
open(sys.argv[1], "w").write(text)
PY
else
	printf '\n%s\n' "$section" >> "$OUT"
fi
echo "$section"
