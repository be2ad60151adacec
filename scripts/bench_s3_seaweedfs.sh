#!/usr/bin/env bash
# The S3 comparison on SeaweedFS (issue 29): the same checkpoints to and from SeaweedFS on
# 127.0.0.1 (built from the Go module proxy by tests/thirdparty/install.sh, started as the
# tests start it, data on tmpfs) with resume-run, `aws s3 cp --recursive` and `rclone copy`,
# runs interleaved, medians of $RUNS. Run alone with BENCH_SECTIONS=s3-seaweedfs
# scripts/bench.sh (or this script directly); writes (or replaces) the "## S3 on SeaweedFS"
# section of $BENCH_OUT (default BENCHMARKS.md).
# Checkpoints: "mixed" from scripts/bench_make_ckpt.py, and the full bench's transformer
# when it is cached.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
RUNS=${RUNS:-5}
OUT=${BENCH_OUT:-$root/BENCHMARKS.md}
RR=$root/build/resume-run
PY=/usr/bin/python3
export PYTHONPATH=$root/scripts RESUME_RUN_CLOUD=none
[ -x "$RR" ] || { cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null; cmake --build build -j2 >/dev/null; }
work=$(mktemp -d /dev/shm/rr-bench-seaweedfs.XXXXXX)
S3_PID=
trap 'kill $S3_PID 2>/dev/null || true; rm -rf "$work"' EXIT
. "$(dirname "$0")/benchlib.sh" # stats, ratio, mb, gbps, mbps, ms_since

$PY scripts/bench_make_ckpt.py mixed "$work/mixed"
cases=mixed
tf=${BENCH_CACHE:-/var/tmp/resume-run-bench}/transformer-27m/step-${STEPS:-30}
if [ -f "$tf/optimizer.safetensors" ]; then
	mkdir -p "$work/transformer" && cp "$tf"/*.safetensors "$work/transformer/"
	cases="transformer $cases"
fi

# SeaweedFS as the tests run it (tests/integration/seaweedfslib.sh, with the few helpers of
# tests/integration/lib.sh it uses).
RR_SRC=$root W=$work
fail() { echo "bench_s3_seaweedfs.sh: $*" >&2; exit 1; }
wait_for() { local end=$((SECONDS + $1)); shift; until "$@"; do [ $SECONDS -lt $end ] || return 1; sleep 0.05; done; }
. tests/integration/seaweedfslib.sh
S3_PORT=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
start_seaweedfs "$S3_PORT" "$work/s3data" "$work/seaweedfs.log"
seaweedfs_mb bench
export AWS_ACCESS_KEY_ID=$S3_AKID AWS_SECRET_ACCESS_KEY=$S3_SECRET AWS_REGION=us-east-1 \
	AWS_ENDPOINT_URL=http://127.0.0.1:$S3_PORT AWS_EC2_METADATA_DISABLED=true AWS_PAGER=
AWS="/usr/bin/aws --endpoint-url $AWS_ENDPOINT_URL"
unset AWS_CA_BUNDLE
export RCLONE_CONFIG_S3_TYPE=s3 RCLONE_CONFIG_S3_PROVIDER=SeaweedFS RCLONE_CONFIG_S3_REGION=us-east-1 \
	RCLONE_CONFIG_S3_ENDPOINT=$AWS_ENDPOINT_URL RCLONE_CONFIG_S3_ACCESS_KEY_ID=$AWS_ACCESS_KEY_ID \
	RCLONE_CONFIG_S3_SECRET_ACCESS_KEY=$AWS_SECRET_ACCESS_KEY RCLONE_CONFIG_S3_FORCE_PATH_STYLE=true
RCLONE="rclone --config /dev/null -q"

rows=""
for c in $cases; do
	echo "== $c on SeaweedFS: resume-run vs aws s3 cp vs rclone ($RUNS runs, interleaved)"
	src=$work/$c; bytes=$(cat "$src"/* | wc -c)
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
		# (resume-run's default --precision auto stores F32 rounded: same files, same sizes)
		[ "$(cd "$work/r-$c-$i/step-1" && find . -type f -printf '%p %s\n' | sort)" = \
		  "$(cd "$src" && find . -type f -printf '%p %s\n' | sort)" ]
		diff -r "$work/a-$c-$i" "$src" > /dev/null
		diff -r "$work/c-$c-$i" "$src" > /dev/null
		if [ "$i" = 1 ]; then
			stored=$($AWS s3 ls --recursive --summarize "s3://bench/$c-rr-1/" | sed -nE 's/.*Total Size: ([0-9]+).*/\1/p')
			nobj=$($AWS s3 ls --recursive "s3://bench/$c-rr-1/default/chunks/" | grep -c .)
		fi
		rm -rf "$cdir" "$work/r-$c-$i" "$work/a-$c-$i" "$work/c-$c-$i"
		$AWS s3 rm --quiet --recursive "s3://bench/$c-aws-$i/"; $AWS s3 rm --quiet --recursive "s3://bench/$c-rc-$i/"
	done
	for t in rr-put aws-put rc-put rr-get aws-get rc-get; do
		read -r m lo hi < <(stats < "$work/$c-$t.txt"); eval "m_${t//-/_}=$m r_${t//-/_}='$lo–$hi'"
	done
	# shellcheck disable=SC2154 # m_* and r_* are set by the eval above
	rows+="| $c, $(mb "$bytes") ($(mb "$stored") stored, $nobj chunk objects) | persist | $m_rr_put ms ($r_rr_put) | $m_aws_put ms ($r_aws_put) | **$(ratio "$m_aws_put" "$m_rr_put")x** | $m_rc_put ms ($r_rc_put) | **$(ratio "$m_rc_put" "$m_rr_put")x** |
| | restore | $m_rr_get ms ($r_rr_get) | $m_aws_get ms ($r_aws_get) | **$(ratio "$m_aws_get" "$m_rr_get")x** | $m_rc_get ms ($r_rc_get) | **$(ratio "$m_rc_get" "$m_rr_get")x** |
"
done
kill "$S3_PID"; wait "$S3_PID" 2>/dev/null || true; S3_PID=

section=$(cat <<MD
## S3 on SeaweedFS

Produced by \`BENCH_SECTIONS=s3-seaweedfs scripts/bench.sh\`
(\`scripts/bench_s3_seaweedfs.sh\`, RUNS=$RUNS) on $(date -u +%Y-%m-%d), $(nproc) cores shared
with other work (load average $(cut -d' ' -f1-3 /proc/loadavg) when it ended). The same files
to and from SeaweedFS (\`github.com/seaweedfs/seaweedfs\`, the commit of 2026-11-09, built
from the Go module proxy by \`tests/thirdparty/install.sh\`; \`weed mini\` with its S3
gateway, data on tmpfs; it verifies SigV4) on 127.0.0.1, each tool started from scratch per
run, runs interleaved, medians (min–max). SeaweedFS runs on the same 2 cores as the clients,
so these are figures for this setup, not for AWS.

| checkpoint | | resume-run | \`aws s3 cp --recursive\` (awscli $(/usr/bin/aws --version 2>&1 | cut -d' ' -f1 | cut -d/ -f2)) | ratio | \`rclone copy\` ($(rclone --version 2>/dev/null | head -1 | cut -d' ' -f2)) | ratio |
|---|---|---|---|---|---|---|
$rows
resume-run ran with its defaults (\`--precision auto\`: F32 tensors stored rounded, so its restore
gives the same files at the same sizes); the \`aws s3 cp\` and rclone downloads are compared
with the source files (\`diff -r\`).
MD
)
SECTION=$section $PY - "$OUT" <<'PY'
import os, re, sys
path, section = sys.argv[1], os.environ["SECTION"].rstrip("\n") + "\n"
text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
m = re.search(r"^## S3 on SeaweedFS\n.*?(?=^## |\Z)", text, re.S | re.M)
if m:
    text = text[:m.start()] + section + ("\n" if m.end() < len(text) else "") + text[m.end():]
else:
    text = text.rstrip("\n") + "\n\n" + section
open(path, "w").write(text)
PY
echo "$section"
