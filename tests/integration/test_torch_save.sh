#!/usr/bin/env bash
# torch.save files (docs/how-it-works.md, "What is stored"): an HF-Trainer-shaped checkpoint
# (model.safetensors,
# optimizer.pt, scheduler.pt, rng_state.pth, trainer_state.json) and a Lightning-shaped .ckpt
# made by real torch.save are persisted record by record and restored: under auto every F32
# record comes back within the bound, torch.load takes every file (weights_only=True where
# the original allowed it) and zipfile's CRC check passes; under exact every file is
# byte-identical; an unchanged checkpoint reuses every record; legacy and compressed files
# are stored byte-exact with one warning, a .bin of another kind silently.
. "$(dirname "$0")/lib.sh"
T="$RR_SRC/tests/integration/trainers"
CHECK="$PY $RR_SRC/tests/integration/check_tensors.py"
man() { echo "$W/$1/default/checkpoints/$2/manifest.json"; }

# 1. auto: records encoded as tensors, the files load, within the bound.
run_rr auto.log --store "file://$W/s1" --checkpoint-dir "$W/c1" -- "$PY" "$T/torch_files.py" hf-lightning
expect_eq "$RC" 0 "training under resume-run"
"$RR_BIN" restore --store "file://$W/s1" --checkpoint step-1 --to r1 > restore.log 2>&1
$CHECK c1/step-1 r1/step-1 "$(man s1 step-1)" | tee check.out
grep -q 'checked: [1-9][0-9]* lossy tensors' check.out || fail "no lossy tensor was checked"
grep -q 'torch.save: 5 files load and pass testzip (1 with weights_only=True)' check.out ||
	fail "not every torch.save file was loaded and zip-checked"
"$PY" - "$(man s1 step-1)" c1/step-1/optimizer.pt <<'PY' || fail "torch.save records not stored as tensors"
import json, sys
import numpy as np
m = json.load(open(sys.argv[1]))
files = {f["path"]: f for f in m["files"]}
for name in ("optimizer.pt", "lightning.ckpt", "pytorch_model.bin", "rng_state.pth", "scheduler.pt"):
    assert files[name].get("format") == "torch", (name, files[name].get("format"))
def segs(name): return [s for s in files[name]["segments"] if "tensor" in s]
opt = segs("optimizer.pt")
assert opt and all(s["dtype"] == "F32" and s["tensor"].startswith("optimizer/data/") for s in opt), opt[:3]
lossy = [s for s in opt if s["encoding"] != "shuffle+zstd"]
# Rounded: every record of more than 256 elements with a fraction somewhere (the moments of
# the weights); exact: Adam's steps and the small records (LayerNorm, biases of 64).
raw = open(sys.argv[2], "rb").read()
for s in opt:
    x = np.frombuffer(raw, "<f4", count=s["length"] // 4, offset=s["offset"])
    fin = x[np.isfinite(x)]
    exact = x.size <= 256 or np.array_equal(np.trunc(fin), fin)
    assert (s["encoding"] == "shuffle+zstd") == exact, (s["tensor"], x.size, s["encoding"])
assert len(lossy) >= len(opt) // 5, (len(lossy), len(opt))
rng = segs("rng_state.pth")
assert len(rng) == 1 and rng[0]["dtype"] == "U8" and rng[0]["encoding"] == "shuffle+zstd", rng
assert "format" not in files["trainer_state.json"]
ratio = sum(f["size"] for f in m["files"]) / sum(c["stored_size"] for f in m["files"] for s in f["segments"] for c in s["chunks"])
print(f"auto: {len(opt)} optimizer records, {len(lossy)} lossy; whole checkpoint {ratio:.2f}x smaller")
PY
ok "auto: torch.save records stored as tensors; every file loads, passes testzip, within the bound"

# The unchanged step-2 reuses every record and header of step-1.
expect_grep 'persisted step-2: .* ([0-9]+) of \1 segments unchanged' auto.log "step-2 unchanged"
ok "an unchanged torch.save checkpoint is not encoded or written again"

# 2. exact: byte-identical, CRCs untouched.
run_rr exact.log --precision exact --store "file://$W/s2" --checkpoint-dir "$W/c2" -- "$PY" "$T/torch_files.py" hf-lightning
expect_eq "$RC" 0 "training (exact)"
"$RR_BIN" restore --store "file://$W/s2" --checkpoint step-1 --to r2 > /dev/null 2>&1
for f in c2/step-1/*; do cmp "$f" "r2/step-1/${f##*/}" || fail "exact: ${f##*/} differs"; done
expect_grep 'step-1 tensors: 0 fp16, 0 bf16, [1-9][0-9]* exact' exact.log "all exact"
ok "exact: every torch.save file byte-identical"

# 3. What is not read record by record is stored byte-exact.
run_rr odd.log --store "file://$W/s3" --checkpoint-dir "$W/c3" -- "$PY" "$T/torch_files.py" odd
expect_eq "$RC" 0 "odd files"
expect_grep '"legacy.pt" is not a valid torch file \(a legacy \(non-zip\) torch.save file\); it is stored byte-exact' odd.log "legacy warned"
expect_grep '"deflated.pt" is not a valid torch file \(entry ".*" is compressed\)' odd.log "compressed warned"
grep -q 'other.bin' odd.log && fail "a .bin of another kind was warned about"
expect_eq "$(grep -c 'is not a valid torch file' odd.log)" 2 "one warning per file"
"$RR_BIN" restore --store "file://$W/s3" --to r3 > /dev/null 2>&1
for f in c3/step-1/*; do cmp "$f" "r3/step-1/${f##*/}" || fail "${f##*/} not byte-exact"; done
"$PY" -c 'import sys, torch; torch.load(sys.argv[1]); torch.load(sys.argv[2])' \
	r3/step-1/legacy.pt r3/step-1/deflated.pt
ok "legacy, compressed and foreign files stored byte-exact (one warning each for the torch ones)"
finish
