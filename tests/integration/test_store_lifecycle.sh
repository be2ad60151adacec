#!/usr/bin/env bash
# Several commits in a row (the newest wins, none half-read), chunks already in the store
# not written again, retention (--keep), garbage collection, periodic checkpoints (--every).
. "$(dirname "$0")/lib.sh"

head -c 4000000 /dev/urandom > frozen.bin
cat > burst.sh <<'SH'
#!/bin/sh
set -e
d=$RESUME_RUN_CHECKPOINT_DIR
commit() { # name content
	mkdir "$d/.$1.tmp"; cp frozen.bin "$d/.$1.tmp/frozen.bin"; echo "$2" > "$d/.$1.tmp/state.txt"
	mv "$d/.$1.tmp" "$d/$1"
}
commit step-1 one
sleep 1
# Five commits within a millisecond: prepared first, then renamed in one tight loop.
for i in 2 3 4 5 6; do
	mkdir "$d/.step-$i.tmp"; cp frozen.bin "$d/.step-$i.tmp/frozen.bin"; echo "state $i" > "$d/.step-$i.tmp/state.txt"
done
/usr/bin/python3 -c 'import os,sys; [os.rename(f"{sys.argv[1]}/.step-{i}.tmp", f"{sys.argv[1]}/step-{i}") for i in range(2, 7)]' "$d"
sleep 1
commit step-7 seven
SH
chmod +x burst.sh
run_rr burst.log --keep 2 -- ./burst.sh
expect_eq "$RC" 0 "exit status"
store=.resume-run/store/default
grep -q '"checkpoint":"step-7"' $store/LATEST || fail "LATEST is not step-7"
persisted=$(grep -cE 'persisted step-' burst.log)
[ "$persisted" -lt 7 ] || fail "every commit of the burst was persisted; expected the newest to win"
expect_grep 'persisted step-6' burst.log "newest of the burst persisted"
ok "burst of commits: $persisted of 7 persisted, newest of the burst (step-6) and step-7 among them"

# The 4 MB file is the same in every checkpoint: written once.
new7=$("$PY" - $store <<'PY'
import glob, json, sys
ev = [json.load(open(p)) for p in sorted(glob.glob(sys.argv[1] + "/events/*-checkpoint.json"))]
print(next(e["new_bytes"] for e in ev if e["checkpoint"] == "step-7"))
PY
)
[ "$new7" -lt 100000 ] || fail "step-7 wrote $new7 new bytes; the unchanged 4 MB file was written again"
expect_grep 'persisted step-7: 2 files, 4.0 MB -> 4.0 MB stored, [0-9.]+ [kB]+ new, 1 of 2 segments unchanged' burst.log "log says how much was new"
ok "unchanged 4 MB file not written again (step-7 wrote $new7 new bytes)"

# Retention kept the 2 newest; gc removes chunks nobody references once they are older than
# its grace (--gc-grace, at least 10 minutes): here aged by hand.
expect_eq "$(ls $store/checkpoints | tr '\n' ' ')" "step-6 step-7 " "checkpoints kept by --keep 2"
find "$store/chunks" -type f -exec touch -d '2 hours ago' {} +
"$RR_BIN" gc --keep 2 > gc.log 2>&1
expect_grep 'gc: deleted 0 checkpoints and [1-9][0-9]* chunks' gc.log "gc deleted chunks"
referenced=$("$PY" - $store <<'PY'
import glob, json, sys
s = set()
for p in glob.glob(sys.argv[1] + "/checkpoints/*/manifest.json"):
    m = json.load(open(p))
    s |= {c["sha256"] for f in m["files"] for g in f["segments"] for c in g["chunks"]}
print(len(s))
PY
)
expect_eq "$(find $store/chunks -type f | wc -l)" "$referenced" "chunks left = chunks referenced"
"$RR_BIN" verify > verify.out
expect_eq "$(grep -c ': ok$' verify.out)" 2 "both kept checkpoints verify"
ok "keep 2: step-6 and step-7 kept; gc left exactly the referenced chunks; both verify"

"$RR_BIN" gc --keep 1 > gc1.log 2>&1
expect_eq "$(ls $store/checkpoints | tr '\n' ' ')" "step-7 " "gc --keep 1"
ok "gc --keep 1 keeps the newest"

# --every asks periodically, without a notice file.
run_rr every.log --every 1s --store "file://$W/s2" --checkpoint-dir "$W/c2" -- \
	"$PY" "$TRAINER" --steps 250 --step-time 0.02 --checkpoint-every 0
expect_eq "$RC" 0 "exit status"
asks=$(grep -c 'asked the trainer for a checkpoint (SIGUSR1 to 1 process)' every.log)
[ "$asks" -ge 2 ] || fail "--every 1s asked $asks times in a ~5 s run"
[ ! -e "$W/c2/.resume-run-notice.json" ] || fail "--every must not raise a notice"
ok "--every 1s: asked $asks times, checkpoints persisted, no notice file"
finish
