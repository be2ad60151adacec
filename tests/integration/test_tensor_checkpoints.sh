#!/usr/bin/env bash
# Tensor-aware checkpoints (docs/how-it-works.md, "What is stored"): a real PyTorch checkpoint
# (model + AdamW state) under --precision auto comes back within the error bound for every
# value, with identical headers; exact is byte-identical; specials come back bit for bit;
# unchanged tensors are not written again; a file the strict reader refuses is stored
# byte-exact.
. "$(dirname "$0")/lib.sh"
T="$RR_SRC/tests/integration/trainers"
CHECK="$PY $RR_SRC/tests/integration/check_tensors.py"
TRAIN="$RR_SRC/scripts/train_transformer.py"
manifest() { echo ".resume-run/store/default/checkpoints/$1/manifest.json"; }

# 1. A small transformer trained 30 steps with AdamW, checkpointed under resume-run (auto).
run_rr auto.log --keep 5 -- "$PY" "$TRAIN" --steps 30 --checkpoint-every 10
expect_eq "$RC" 0 "training under resume-run"
expect_grep 'step-30 tensors: [0-9]+ fp16, [0-9]+ bf16, [0-9]+ exact' auto.log "encodings logged"
"$RR_BIN" restore --checkpoint step-30 --to restored > restore.log 2>&1
$CHECK .resume-run/checkpoints/step-30 restored/step-30 "$(manifest step-30)" | tee check.out
grep -q 'checked: [1-9][0-9]* lossy tensors' check.out || fail "no lossy tensor was checked"
f32=$(cat .resume-run/checkpoints/step-30/*.safetensors | wc -c)
stored=$("$PY" -c 'import json,sys; m=json.load(open(sys.argv[1])); print(sum(c["stored_size"] for f in m["files"] if f["path"].endswith(".safetensors") for s in f["segments"] for c in s["chunks"]))' "$(manifest step-30)")
ok "auto: every value of step-30 within the bound after restore ($f32 bytes of safetensors stored in $stored)"

# The restored checkpoint loads in PyTorch and training resumes from it.
rm -rf .resume-run/checkpoints restored
run_rr resume.log -- "$PY" "$TRAIN" --steps 40 --checkpoint-every 0 --out resumed.json
expect_eq "$RC" 0 "resume"
expect_grep 'resumed from step 30' resume.log "trainer resumed from the lossy checkpoint"
ok "PyTorch loads the restored model and AdamW state and trains on"

# 2. exact: byte-identical.
run_rr exact.log --precision exact --store "file://$W/s2" --checkpoint-dir "$W/c2" -- "$PY" "$TRAIN" --steps 10 --checkpoint-every 10
expect_eq "$RC" 0 "training (exact)"
"$RR_BIN" restore --store "file://$W/s2" --to r2 > /dev/null 2>&1
cmp c2/step-10/model.safetensors r2/step-10/model.safetensors || fail "exact model differs"
cmp c2/step-10/optimizer.safetensors r2/step-10/optimizer.safetensors || fail "exact optimizer differs"
expect_grep 'step-10 tensors: 0 fp16, 0 bf16, [1-9][0-9]* exact' exact.log "all exact"
ok "exact: model and optimizer byte-identical"

# 3. --exact GLOB keeps the named tensors exact under auto.
run_rr glob.log --exact '*.bias' --exact 'tok.*' --store "file://$W/s3" --checkpoint-dir "$W/c3" -- "$PY" "$TRAIN" --steps 10 --checkpoint-every 10
"$PY" - "$W/s3/default/checkpoints/step-10/manifest.json" <<'PY' || fail "--exact globs not honoured"
import fnmatch, json, sys
m = json.load(open(sys.argv[1]))
segs = [s for f in m["files"] if f["path"] == "model.safetensors" for s in f["segments"] if "tensor" in s]
named = [s for s in segs if fnmatch.fnmatch(s["tensor"], "*.bias") or fnmatch.fnmatch(s["tensor"], "tok.*")]
assert named and all(s["encoding"] == "shuffle+zstd" for s in named), [(s["tensor"], s["encoding"]) for s in named]
assert any(s["encoding"] != "shuffle+zstd" for s in segs)
PY
ok "--exact globs: matching tensors stored exact, others not"

# 4. Specials: zeros, Inf, NaN, subnormals, extremes; a NaN with a payload forces exact.
run_rr sp.log --store "file://$W/s4" --checkpoint-dir "$W/c4" -- "$PY" "$T/tensor_files.py" specials
expect_eq "$RC" 0 "specials"
"$RR_BIN" restore --store "file://$W/s4" --to r4 > /dev/null 2>&1
$CHECK c4/step-1 r4/step-1 "$W/s4/default/checkpoints/step-1/manifest.json"
"$PY" - "$W/s4/default/checkpoints/step-1/manifest.json" <<'PY' || fail "encodings of the special tensors"
import json, sys
m = json.load(open(sys.argv[1]))
enc = {s["tensor"]: s["encoding"] for f in m["files"] for s in f["segments"] if "tensor" in s}
assert enc["payload_nan"] == "shuffle+zstd", enc   # NaN payload: exact
assert enc["specials"] == "bf16+shuffle+zstd", enc  # range too wide for scaled FP16
assert enc["ints"] == "shuffle+zstd" and enc["half"] == "shuffle+zstd", enc
assert "empty" not in enc, enc                      # no bytes, no segment
PY
ok "specials bit-exact, payload NaN tensor exact, other dtypes lossless"

# 5. Incremental: only the two changed tensors are written.
run_rr inc.log --store "file://$W/s5" --checkpoint-dir "$W/c5" -- "$PY" "$T/tensor_files.py" incremental
expect_eq "$RC" 0 "incremental"
"$PY" - "$W/s5/default" <<'PY' || fail "incremental checkpoint wrote more than the changed tensors"
import glob, json, sys
run = sys.argv[1]
ev = {e["checkpoint"]: e for e in (json.load(open(p)) for p in glob.glob(run + "/events/*-checkpoint.json"))}
m2 = json.load(open(run + "/checkpoints/step-2/manifest.json"))
m1 = json.load(open(run + "/checkpoints/step-1/manifest.json"))
def chunks(m, names):
    return sum(c["stored_size"] for f in m["files"] for s in f["segments"] if s.get("tensor") in names for c in s["chunks"])
changed = chunks(m2, {"layer3.weight", "layer7.weight"})
e = ev["step-2"]
assert e["unchanged_segments"] == e["segments"] - 2, e      # header + 8 tensors reused
assert e["new_bytes"] <= changed + 16384, (e["new_bytes"], changed)  # + the manifest
assert e["new_bytes"] >= changed, (e["new_bytes"], changed)
print(f"step-2 wrote {e['new_bytes']} bytes: the 2 changed tensors ({changed}) and the manifest; "
      f"step-1 had written {ev['step-1']['new_bytes']}")
PY
expect_grep 'persisted step-2: .* 9 of 11 segments unchanged' inc.log "log says what was unchanged"
ok "incremental: only the two changed tensors were encoded and written"

# 6. A file the strict reader refuses is stored byte-exact, with one warning.
run_rr inv.log --store "file://$W/s6" --checkpoint-dir "$W/c6" -- "$PY" "$T/tensor_files.py" invalid
expect_eq "$RC" 0 "invalid"
expect_grep '"bad.safetensors" is not a valid safetensors file \(.*\); it is stored byte-exact' inv.log "warned"
"$RR_BIN" restore --store "file://$W/s6" --to r6 > /dev/null 2>&1
cmp c6/step-1/bad.safetensors r6/step-1/bad.safetensors || fail "refused file not byte-exact"
ok "refused safetensors file stored byte-exact and said so"
finish
