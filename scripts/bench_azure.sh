#!/usr/bin/env bash
# Azure Blob Storage, run alone with BENCH_SECTIONS=azure scripts/bench.sh (or this script
# directly) and at the end of the full bench. Writes (or replaces) the "## Azure Blob Storage"
# section of $BENCH_OUT (default BENCHMARKS.md).
#
# The same checkpoint directory (the full bench's transformer checkpoint when it is cached,
# else scripts/bench_make_ckpt.py's "mixed") to and from Azurite on 127.0.0.1 (in memory,
# Shared Key) with resume-run (az://) and with the Azure CLI's `az storage blob
# upload-batch` / `download-batch`, runs interleaved, medians of $RUNS, every copy compared
# byte for byte. Then what Azurite itself costs on this machine: curl PUTs and GETs of the
# same files (one request each, a SAS in the URL) and of 200 blobs of 4 KiB on one
# connection.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
RUNS=${RUNS:-5}
OUT=${BENCH_OUT:-$root/BENCHMARKS.md}
RR=$root/build/resume-run
PY=/usr/bin/python3
export PYTHONPATH=$root/scripts RESUME_RUN_CLOUD=none
[ -x "$RR" ] || { cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null; cmake --build build -j2 >/dev/null; }
work=$(mktemp -d /dev/shm/rr-bench-azure.XXXXXX)
azpid=
trap 'kill $azpid 2>/dev/null || true; rm -rf "$work"' EXIT
. "$(dirname "$0")/benchlib.sh" # stats, ratio, mb, gbps, mbps, ms_since

STEPS=${STEPS:-30}
tf=${BENCH_CACHE:-/var/tmp/resume-run-bench}/transformer-27m/step-$STEPS
src=$work/src
if [ -f "$tf/optimizer.safetensors" ]; then
	mkdir -p "$src" && cp "$tf"/* "$src/"
	what="the full bench's transformer checkpoint (27M parameters with AdamW state, \`scripts/train_transformer.py\`)"
else
	$PY scripts/bench_make_ckpt.py mixed "$src"
	what="\`scripts/bench_make_ckpt.py mixed\` (4 safetensors files of trained-looking F32 tensors; the transformer checkpoint of the full bench was not cached)"
fi
bytes=$(cat "$src"/* | wc -c)
cat "$src"/* > /dev/null

echo "== Azurite"
tests/azure/install-azurite.sh
port=$($PY -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
dir=${RR_AZURITE_DIR:-/var/tmp/resume-run-azurite}
"$dir/node_modules/.bin/azurite-blob" --blobHost 127.0.0.1 --blobPort "$port" --inMemoryPersistence \
	--skipApiVersionCheck --disableProductStyleUrl --silent > "$work/azurite.log" 2>&1 &
azpid=$!
for _ in $(seq 900); do $PY -c "import socket; socket.create_connection(('127.0.0.1', $port))" 2>/dev/null && break; sleep 0.1; done
key='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='
endpoint=http://127.0.0.1:$port/devstoreaccount1
export AZURE_STORAGE_CONNECTION_STRING="DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=$key;BlobEndpoint=$endpoint;"
export HOME=$work/home AZURE_CONFIG_DIR=$work/home/.azure AZURE_CORE_COLLECT_TELEMETRY=no
mkdir -p "$HOME"
AZ="/usr/bin/az"
$AZ storage container create -n bench --only-show-errors > /dev/null

echo "== resume-run vs az storage blob upload-batch / download-batch ($RUNS runs, interleaved)"
for f in rr-put cli-put rr-get cli-get rss; do : > "$work/$f.txt"; done
for i in $(seq "$RUNS"); do
	cdir=$work/ck-$i; mkdir -p "$cdir" && cp -al "$src" "$cdir/step-1"
	t0=$(date +%s%N)
	/usr/bin/time -f '%M' -o "$work/rss-$i" "$RR" --store "az://bench/rr-$i" --checkpoint-dir "$cdir" -- true 2> "$work/rr-$i.log"
	ms_since "$t0" >> "$work/rr-put.txt"
	cat "$work/rss-$i" >> "$work/rss.txt"
	t0=$(date +%s%N)
	$AZ storage blob upload-batch -d bench --destination-path "cli-$i" -s "$src" --only-show-errors > /dev/null 2>&1
	ms_since "$t0" >> "$work/cli-put.txt"
	t0=$(date +%s%N)
	"$RR" restore --store "az://bench/rr-$i" --to "$work/r-$i" 2> /dev/null
	ms_since "$t0" >> "$work/rr-get.txt"
	mkdir -p "$work/c-$i"
	t0=$(date +%s%N)
	$AZ storage blob download-batch -s bench -d "$work/c-$i" --pattern "cli-$i/*" --only-show-errors > /dev/null 2>&1
	ms_since "$t0" >> "$work/cli-get.txt"
	for f in "$src"/*; do # the CLI's copy identical; ours the same files (F32 rounded: auto)
		cmp "$f" "$work/c-$i/cli-$i/$(basename "$f")"
		[ "$(stat -c %s "$f")" = "$(stat -c %s "$work/r-$i/step-1/$(basename "$f")")" ]
	done
	rm -rf "$work/r-$i" "$work/c-$i" "$cdir"
done
# The lossless check: one persist and restore under --precision exact, compared byte for byte.
cdir=$work/ck-exact; mkdir -p "$cdir" && cp -al "$src" "$cdir/step-1"
"$RR" --precision exact --store az://bench/exact --checkpoint-dir "$cdir" -- true 2> /dev/null
"$RR" restore --store az://bench/exact --to "$work/r-exact" 2> /dev/null
for f in "$src"/*; do cmp "$f" "$work/r-exact/step-1/$(basename "$f")"; done
stored=$($AZ storage blob list -c bench --prefix rr-1/ --num-results '*' --query 'sum([].properties.contentLength)' -o tsv)
read -r rr_put rr_put_min rr_put_max < <(stats < "$work/rr-put.txt")
read -r cli_put cli_put_min cli_put_max < <(stats < "$work/cli-put.txt")
read -r rr_get rr_get_min rr_get_max < <(stats < "$work/rr-get.txt")
read -r cli_get cli_get_min cli_get_max < <(stats < "$work/cli-get.txt")
read -r rss _ _ < <(stats < "$work/rss.txt")
persisted=$(sed -nE 's/.*persisted step-1: (.*), ([0-9.]+ s)$/\2/p' "$work/rr-1.log")

echo "== what Azurite itself costs: curl, one request per file; 200 blobs of 4 KiB"
expiry=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%MZ)
sas=$($AZ storage container generate-sas -n bench --permissions racwdl --expiry "$expiry" -o tsv)
: > "$work/curl-put.txt"; : > "$work/curl-get.txt"; : > "$work/small.txt"
head -c 4096 /dev/urandom > "$work/small"
for i in $(seq "$RUNS"); do
	t0=$(date +%s%N)
	for f in "$src"/*; do
		curl -fsS -T "$f" -H 'x-ms-blob-type: BlockBlob' "$endpoint/bench/raw-$i/$(basename "$f")?$sas" -o /dev/null
	done
	ms_since "$t0" >> "$work/curl-put.txt"
	t0=$(date +%s%N)
	for f in "$src"/*; do curl -fsS "$endpoint/bench/raw-$i/$(basename "$f")?$sas" -o /dev/null; done
	ms_since "$t0" >> "$work/curl-get.txt"
	for n in $(seq 200); do
		printf 'upload-file = "%s"\nurl = "%s"\noutput = "/dev/null"\n' "$work/small" "$endpoint/bench/small-$i/$n?$sas"
	done > "$work/small.cfg"
	t0=$(date +%s%N)
	curl -fsS -H 'x-ms-blob-type: BlockBlob' --config "$work/small.cfg"
	ms_since "$t0" >> "$work/small.txt"
done
read -r curl_put _ _ < <(stats < "$work/curl-put.txt")
read -r curl_get _ _ < <(stats < "$work/curl-get.txt")
read -r small _ _ < <(stats < "$work/small.txt")
kill $azpid 2>/dev/null || true

azv=$(sed -nE 's/.*"version": "([^"]+)".*/\1/p' "$dir/node_modules/azurite/package.json" | head -n 1)
cliv=$($AZ version -o tsv --query '"azure-cli"' 2>/dev/null || echo "?")
section=$(cat <<MD
## Azure Blob Storage: persist and restore against Azurite

The same checkpoint directory, $what: $(mb "$bytes") in $(find "$src" -type f | wc -l) files, to and
from Azurite $azv (Microsoft's emulator, in memory, Shared Key) on 127.0.0.1, each tool
started from scratch per run (wall clock of the whole command), $RUNS runs interleaved,
medians (min–max). Made by \`BENCH_SECTIONS=azure scripts/bench.sh\` on $(date -u +%Y-%m-%d),
$(nproc) cores; load average when it ended: $(cut -d' ' -f1-3 /proc/loadavg). Azurite is a Node
program on the same cores as the client: figures for this setup, not for Azure.

| | resume-run | \`az storage blob upload-batch\` / \`download-batch\` (azure-cli $cliv) | ratio |
|---|---|---|---|
| persist (to durable) | $rr_put ms ($rr_put_min–$rr_put_max) | $cli_put ms ($cli_put_min–$cli_put_max) | **$(ratio "$cli_put" "$rr_put")x** |
| restore (download) | $rr_get ms ($rr_get_min–$rr_get_max) | $cli_get ms ($cli_get_min–$cli_get_max) | **$(ratio "$cli_get" "$rr_get")x** |
| bytes sent | $(mb "$stored") | $(mb "$bytes") | |

- Commands: \`resume-run --store az://bench/rr-N --checkpoint-dir DIR -- true\` (persists the
  newest local checkpoint at start: probe, encode, upload, manifest, LATEST, ledger; the
  persist itself took $persisted of it in the first run) and \`resume-run restore --store
  az://bench/rr-N --to DIR\`, against \`az storage blob upload-batch -d bench
  --destination-path cli-N -s DIR\` and \`az storage blob download-batch -s bench -d DIR
  --pattern 'cli-N/*'\` (their defaults; the CLI's own start-up, about a second of Python,
  is in its figures as it is in a user's). \`--precision auto\` (the default): the agent
  sends fewer bytes; one run under \`--precision exact\` restored byte-identical files.
- Agent peak RSS during the persist: $(awk -v k="$rss" 'BEGIN { printf "%.0f MB", k / 1024 }') (median).
- What Azurite itself takes on this machine, curl with a SAS: one PUT per file, the $(mb "$bytes")
  in $curl_put ms ($(mbps "$bytes" "$curl_put")); one GET per file, $curl_get ms ($(mbps "$bytes" "$curl_get"));
  200 PUTs of 4 KiB on one connection, $small ms ($(awk -v ms="$small" 'BEGIN { printf "%.0f", 200000 / ms }') requests/s). A persist or
  restore cannot beat the first two by much; the rest of the agent's time is encoding.
MD
)
AZ_SECTION=$section $PY - "$OUT" <<'PY'
import os, re, sys
path, section = sys.argv[1], os.environ["AZ_SECTION"].rstrip("\n") + "\n"
text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
m = re.search(r"^## Azure Blob Storage.*?(?=^## |\Z)", text, flags=re.S | re.M)
if m:
    text = text[:m.start()] + section + ("\n" if m.end() < len(text) else "") + text[m.end():]
else:
    nxt = re.search(r"^## Cloud notices", text, flags=re.M)
    at = nxt.start() if nxt else len(text)
    text = text[:at].rstrip("\n") + "\n\n" + section + ("\n" + text[at:] if nxt else "")
open(path, "w").write(text)
PY
echo "$section"
