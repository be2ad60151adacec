# shellcheck shell=bash disable=SC2154 # RR, PY, ckpt, work, ... come from bench.sh, which sources this
# The encryption case of scripts/bench.sh (sourced by it; uses its RR, PY, ckpt, work, STEPS,
# RUNS, OUT and stats): persist of the bench checkpoint into a tmpfs file:// store with and
# without --encryption-key-file, runs interleaved, medians; then writes (or replaces) the
# "## Encryption" section of $OUT. Runs alone with BENCH_SECTIONS=encryption scripts/bench.sh.

# s_enc_persist PRECISION on|off RUN: prints "<persist ms> <wall ms> <bytes in the store>
# <cpu ms>". The persist time is the agent's own "persisted ..." log line (the ledger is
# sealed when encryption is on, so both sides are read from the same line); the CPU time
# (user + system of the whole command) is what a busy machine cannot blur.
s_enc_persist() {
	local store=$work/enc-$1-$2-$3 cdir=$work/enc-ck-$1-$2-$3 log=$work/enc-log-$1-$2-$3
	local key=() t0 t1
	[ "$2" = on ] && key=(--encryption-key-file "$work/enc.key")
	mkdir -p "$cdir" && cp -al "$ckpt" "$cdir/step-$STEPS"
	t0=$(date +%s%N)
	# CPU time from wait4's rusage (microseconds; time(1) only has centiseconds).
	$PY -c 'import os, subprocess, sys
p = subprocess.Popen(sys.argv[2:], stderr=open(sys.argv[1] + ".err", "w"))
_, status, ru = os.wait4(p.pid, 0)
open(sys.argv[1], "w").write("%d\n" % round((ru.ru_utime + ru.ru_stime) * 1000))
sys.exit(os.waitstatus_to_exitcode(status))' "$log.cpu" \
		"$RR" --precision "$1" "${key[@]}" --store "file://$store" --checkpoint-dir "$cdir" -- true
	mv "$log.cpu.err" "$log"
	t1=$(date +%s%N)
	local s
	s=$(sed -nE 's/.*persisted step-[0-9]+: .*, ([0-9]+\.[0-9]+) s$/\1/p' "$log")
	[ -n "$s" ] || { echo "no persist line in $log" >&2; cat "$log" >&2; return 1; }
	echo "$(awk -v s="$s" 'BEGIN { printf "%d", s * 1000 + 0.5 }') $(( (t1 - t0) / 1000000 ))" \
		"$(find "$store" -type f -printf '%s\n' | awk '{ t += $1 } END { print t + 0 }')" \
		"$(cat "$log.cpu")"
	rm -rf "$cdir"
}

bench_encryption() {
	echo "== encryption: persist with and without --encryption-key-file ($RUNS runs each, interleaved)"
	$PY -c 'import os; print(os.urandom(32).hex())' > "$work/enc.key"
	chmod 600 "$work/enc.key"
	local p m i rows="" in_bytes
	in_bytes=$(cat "$ckpt/model.safetensors" "$ckpt/optimizer.safetensors" | wc -c)
	for p in auto exact; do
		for m in off on; do : > "$work/enc-$p-$m.txt"; done
		for i in $(seq "$RUNS"); do
			for m in off on; do s_enc_persist "$p" "$m" "$i" >> "$work/enc-$p-$m.txt"; done
		done
		local off_ms off_min off_max on_ms on_min on_max off_w on_w off_b on_b off_c on_c
		read -r off_ms off_min off_max < <(cut -d' ' -f1 "$work/enc-$p-off.txt" | stats)
		read -r on_ms on_min on_max < <(cut -d' ' -f1 "$work/enc-$p-on.txt" | stats)
		off_w=$(cut -d' ' -f2 "$work/enc-$p-off.txt" | stats | cut -d' ' -f1)
		on_w=$(cut -d' ' -f2 "$work/enc-$p-on.txt" | stats | cut -d' ' -f1)
		off_c=$(cut -d' ' -f4 "$work/enc-$p-off.txt" | stats | cut -d' ' -f1)
		on_c=$(cut -d' ' -f4 "$work/enc-$p-on.txt" | stats | cut -d' ' -f1)
		off_b=$(head -n1 "$work/enc-$p-off.txt" | cut -d' ' -f3)
		on_b=$(head -n1 "$work/enc-$p-on.txt" | cut -d' ' -f3)
		rows+="| \`--precision $p\` | $off_ms ms ($off_min–$off_max) | $on_ms ms ($on_min–$on_max) | **$(awk -v a="$on_ms" -v b="$off_ms" 'BEGIN { printf "%+.1f%%", 100 * (a - b) / b }')** | $(awk -v b="$in_bytes" -v ms="$off_ms" 'BEGIN { printf "%.2f", b / ms / 1e6 }') → $(awk -v b="$in_bytes" -v ms="$on_ms" 'BEGIN { printf "%.2f", b / ms / 1e6 }') | $off_c → $on_c ms (**$(awk -v a="$on_c" -v b="$off_c" 'BEGIN { printf "%+.1f%%", 100 * (a - b) / b }')**) | $off_w → $on_w ms | $off_b → $on_b |"$'\n'
	done
	# The encrypted exact store restores byte-identical (and only with the key).
	"$RR" restore --store "file://$work/enc-exact-on-1" --encryption-key-file "$work/enc.key" \
		--to "$work/enc-restored" > /dev/null 2>&1
	cmp "$ckpt/model.safetensors" "$work/enc-restored/step-$STEPS/model.safetensors"
	cmp "$ckpt/optimizer.safetensors" "$work/enc-restored/step-$STEPS/optimizer.safetensors"
	rm -rf "$work"/enc-restored "$work"/enc-exact-* "$work"/enc-auto-*
	local section
	section=$(cat <<MD
## Encryption

Persist of the checkpoint above ($(awk -v b="$in_bytes" 'BEGIN { printf "%.1f MB", b / 1e6 }') of safetensors) into a fresh tmpfs \`file://\`
store without and with \`--encryption-key-file\` (AES-256-GCM per object through OpenSSL
EVP, AES-NI; chunk names keyed with HMAC-SHA256 instead of SHA-256, so nothing is hashed
twice). $RUNS runs of each, interleaved, same session ($(date -u +%Y-%m-%d), $(nproc) cores);
persist time from the agent's "persisted" log line; beside it the CPU time (user + system)
and the wall clock of the whole command (start, store open, persist, LATEST, ledger).
Made by \`BENCH_SECTIONS=encryption scripts/bench.sh\`; load average when it ended:
$(cut -d' ' -f1-3 /proc/loadavg) (on a shared machine the wall times blur; the CPU time does not).

| | persist, no key | persist, with key | cost | GB/s of input | CPU time (user+sys, median) | wall clock (median) | bytes in the store |
|---|---|---|---|---|---|---|---|
$rows
The encrypted \`exact\` store restores byte-identical files (\`cmp\` after \`resume-run restore
--encryption-key-file\`). Per object the sealed form adds $((8 + 1 + 8 + 12 + 16)) bytes (header and tag).
MD
)
	ENC_SECTION=$section $PY - "$OUT" <<'PY'
import os, re, sys
path, section = sys.argv[1], os.environ["ENC_SECTION"].rstrip("\n") + "\n"
text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
m = re.search(r"^## Encryption\n.*?(?=^## |\Z)", text, flags=re.S | re.M)
if m:
    text = text[:m.start()] + section + ("\n" if m.end() < len(text) else "") + text[m.end():]
else:
    s3 = re.search(r"^## S3", text, flags=re.M)
    at = s3.start() if s3 else len(text)
    text = text[:at].rstrip("\n") + "\n\n" + section + ("\n" + text[at:] if s3 else "")
open(path, "w").write(text)
PY
	echo "$section"
}
