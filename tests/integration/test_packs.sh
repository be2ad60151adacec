#!/usr/bin/env bash
# Packs (docs/how-it-works.md, "What is stored", "Packs"): a checkpoint of many small tensors is
# a few stored objects, not one per tensor; it restores byte-identical; a second checkpoint with
# one small tensor changed stores little new; encrypted packs restore; a store written by the
# previous release (manifest-1, tests/fixtures/store-manifest-1, made by 8fcdf38 with
# tests/fixtures/store-manifest-1.make.py) still restores with this binary.
. "$(dirname "$0")/lib.sh"
T="$RR_SRC/tests/integration/trainers"
FX="$RR_SRC/tests/fixtures"
objects() { find "$1/default/chunks" -type f | wc -l; }
object_list() { find "$1/default/chunks" -type f -printf '%P %s\n' | sort; }

# 1. 300 small tensors and a 2 MiB one, exact: few objects, byte-identical restore.
run_rr smalls.log --precision exact --keep 5 --store "file://$W/s1" --checkpoint-dir "$W/c1" \
	-- "$PY" "$T/tensor_files.py" smalls
expect_eq "$RC" 0 "smalls run"
M1="$W/s1/default/checkpoints/step-1/manifest.json"
M2="$W/s1/default/checkpoints/step-2/manifest.json"
"$PY" - "$M1" "$M2" > counts.txt <<'PY' || fail "manifest shape: $(cat counts.txt)"
import json, sys
m1, m2 = (json.load(open(p)) for p in sys.argv[1:3])
assert m1["format"] == "resume-run/manifest-2", m1["format"]
def objs(m):
    return {c["sha256"] for f in m["files"] for s in f["segments"] for c in s["chunks"]}
def packed(m):
    return sum(1 for f in m["files"] for s in f["segments"] for c in s["chunks"] if "pack_offset" in c)
segs = sum(len(f["segments"]) for f in m1["files"])
print(segs, len(objs(m1)), packed(m1), len(objs(m2) - objs(m1)))
assert packed(m1) >= 300, packed(m1)
assert len(objs(m1)) <= 10, len(objs(m1))
PY
read -r SEGS OBJ1 PACKED NEW2 < counts.txt
ok "step-1: $SEGS segments ($PACKED packed) in $OBJ1 stored objects"
[ "$NEW2" -le 2 ] || fail "step-2 (one small tensor changed) names $NEW2 new objects"
ok "step-2 with one small tensor changed names $NEW2 new object(s)"
"$RR_BIN" restore --store "file://$W/s1" --checkpoint step-1 --to r1 > r1.log 2>&1 || fail "restore: $(cat r1.log)"
cmp c1/step-1/model.safetensors r1/step-1/model.safetensors || fail "step-1 differs after restore"
"$RR_BIN" restore --store "file://$W/s1" --checkpoint step-2 --to r2 > r2.log 2>&1 || fail "restore: $(cat r2.log)"
cmp c1/step-2/model.safetensors r2/step-2/model.safetensors || fail "step-2 differs after restore"
"$RR_BIN" verify --store "file://$W/s1" > v1.log 2>&1 || fail "verify: $(cat v1.log)"
ok "both checkpoints restore byte-identical and verify"

# 2. Deterministic: the same checkpoint persisted into a fresh store makes the same packs.
run_rr again.log --precision exact --keep 5 --store "file://$W/s1b" --checkpoint-dir "$W/c1b" \
	-- "$PY" "$T/tensor_files.py" smalls
expect_eq "$RC" 0 "smalls run again"
[ "$(object_list "$W/s1")" = "$(object_list "$W/s1b")" ] || fail "packs differ between two runs"
ok "a second run into a fresh store makes the very same $(objects "$W/s1b") objects"

# 3. A damaged pack is refused, not restored.
victim=$("$PY" -c 'import json,sys; m=json.load(open(sys.argv[1])); print(next(c["sha256"] for f in m["files"] for s in f["segments"] for c in s["chunks"] if "pack_offset" in c))' "$M1")
vpath=$(find "$W/s1b/default/chunks" -name "$victim")
printf 'X' | dd of="$vpath" bs=1 seek=100 conv=notrunc 2>/dev/null
run_rr bad.log restore --store "file://$W/s1b" --checkpoint step-1 --to rbad
[ "$RC" -ne 0 ] || fail "a damaged pack restored"
[ ! -e rbad/step-1/model.safetensors ] || fail "a damaged pack left a file"
ok "a damaged pack fails the restore (exit $RC) and leaves nothing"

# 4. Encrypted: packs are sealed like any object and restore with the key.
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > key.hex
run_rr enc.log --precision exact --encryption-key-file key.hex --store "file://$W/s3" \
	--checkpoint-dir "$W/c3" -- "$PY" "$T/tensor_files.py" smalls
expect_eq "$RC" 0 "encrypted smalls run"
[ "$(objects "$W/s3")" -le 12 ] || fail "encrypted: $(objects "$W/s3") objects"
"$RR_BIN" restore --encryption-key-file key.hex --store "file://$W/s3" --checkpoint step-2 \
	--to r3 > r3.log 2>&1 || fail "encrypted restore: $(cat r3.log)"
cmp c3/step-2/model.safetensors r3/step-2/model.safetensors || fail "encrypted step-2 differs"
ok "encrypted packs ($(objects "$W/s3") objects) restore byte-identical"

# 5. A store of the previous release (manifest-1, one object per chunk) restores.
cp -r "$FX/store-manifest-1" "$W/old"
"$RR_BIN" restore --store "file://$W/old" --to rold > rold.log 2>&1 || fail "old store: $(cat rold.log)"
(cd rold/step-1 && sha256sum -c "$FX/store-manifest-1.sha256" > /dev/null) || fail "old store restored other bytes"
"$RR_BIN" verify --store "file://$W/old" > vold.log 2>&1 || fail "old store verify: $(cat vold.log)"
ok "the previous release's store (manifest-1) restores byte-identical and verifies"

# ... and the new binary continues that run: its next checkpoint is manifest-2 with packs.
mkdir -p cold
run_rr cont.log --precision exact --store "file://$W/old" --checkpoint-dir "$W/cold" \
	-- "$PY" "$FX/store-manifest-1.make.py" step-2
expect_eq "$RC" 0 "new binary on the old store"
"$RR_BIN" restore --store "file://$W/old" --checkpoint step-2 --to rnew > rnew.log 2>&1 || fail "continued: $(cat rnew.log)"
cmp cold/step-2/model.safetensors rnew/step-2/model.safetensors || fail "continued checkpoint differs"
grep -q '"resume-run/manifest-2"' "$W/old/default/checkpoints/step-2/manifest.json" || fail "not manifest-2"
ok "the new binary continues the old store: step-2 is manifest-2 and restores"
finish
