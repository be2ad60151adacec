#!/usr/bin/env bash
# Integer-valued and small F32 tensors are never rounded (docs/how-it-works.md, "How checkpoints
# are made small"): Adam's F32 `step` at 4097, saved by real torch.save and as safetensors,
# comes back 4097 under auto, fp16 and bf16 (FP16 would make it 4096, BF16 4096 too), so a
# resumed run's bias correction is unchanged; F32 position ids 2000..4099 come back exact; the
# weight moments beside them are still rounded, within the bound.
. "$(dirname "$0")/lib.sh"
CHECK="$PY $RR_SRC/tests/integration/check_tensors.py"

for p in auto fp16 bf16; do
	run_rr "$p.log" --precision "$p" --store "file://$W/s-$p" --checkpoint-dir "$W/c-$p" -- \
		"$PY" "$RR_SRC/tests/integration/trainers/adam_step.py"
	expect_eq "$RC" 0 "training under resume-run ($p)"
	"$RR_BIN" restore --store "file://$W/s-$p" --checkpoint step-4097 --to "r-$p" > "restore-$p.log" 2>&1
	m="$W/s-$p/default/checkpoints/step-4097/manifest.json"
	$CHECK "c-$p/step-4097" "r-$p/step-4097" "$m" > "check-$p.out" || fail "$p: $(cat "check-$p.out")"
	"$PY" - "r-$p/step-4097" "$m" <<'PY' || fail "$p: an integer-valued tensor changed"
import json, sys
import torch
import resume_run
d, m = sys.argv[1], json.load(open(sys.argv[2]))
for name, state in (("optimizer.pt", torch.load(f"{d}/optimizer.pt")),
                    ("optimizer.safetensors", resume_run.load_state_dict(f"{d}/optimizer.safetensors"))):
    steps = [float(s["step"]) for s in state["state"].values()]
    assert len(steps) == 4 and all(s == 4097.0 for s in steps), (name, steps)
pos = torch.load(f"{d}/buffers.pt")["position_ids"]
assert torch.equal(pos, torch.arange(2000, 4100, dtype=torch.float32)), pos[pos != torch.arange(2000, 4100, dtype=torch.float32)]
segs = {f["path"]: [s for s in f["segments"] if "tensor" in s] for f in m["files"]}
lossy = {p: sum(s["encoding"] != "shuffle+zstd" for s in v) for p, v in segs.items()}
# The 64x64 weight, its two moments (in both optimizer files) are still rounded.
assert lossy["model.safetensors"] >= 1 and lossy["optimizer.pt"] >= 2 and lossy["optimizer.safetensors"] >= 2, lossy
print("steps 4097, position ids exact; lossy tensors:", lossy)
PY
	ok "--precision $p: Adam's step 4097 and F32 position ids come back exact; weights still rounded"
done
finish
