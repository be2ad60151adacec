#!/usr/bin/env bash
# A torch.save checkpoint of CUDA tensors (what a GPU trainer writes) through the agent and
# back: persisted into a file:// store under --precision exact and auto, restored on a fresh
# directory, loaded back onto the GPU. Run by hand on a machine with a GPU and torch:
#   tests/gpu/cuda_checkpoint.sh [path/to/resume-run]
# Prints what it found and checks; exits non-zero on any mismatch. RR_DEVICE=cpu tries the
# script itself on a machine without a GPU.
set -uo pipefail
RR=${1:-build/resume-run}
PY=${PY:-python3}
W=$(mktemp -d /tmp/rr-gpu.XXXXXX)
echo "== machine"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 | head -3
"$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.cuda.is_available(), torch.version.cuda)' 2>&1 | tail -1
echo "== agent"
ldd "$RR" 2>&1 | grep -E 'not found' && { echo "the agent's libraries are missing here"; exit 2; }
"$RR" --version || exit 2
"$PY" - "$W" <<'PY' || exit 2
import os, sys, torch
torch.manual_seed(0)
d = sys.argv[1]
dev = os.environ.get("RR_DEVICE", "cuda")
model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 512)).to(dev)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
for _ in range(5):
    x = torch.randn(64, 512, device=dev)
    loss = model(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
os.makedirs(d + "/ck/.step-5.tmp")
torch.save(model.state_dict(), d + "/ck/.step-5.tmp/model.pt")
torch.save(opt.state_dict(), d + "/ck/.step-5.tmp/optimizer.pt")
os.rename(d + "/ck/.step-5.tmp", d + "/orig")
print("saved CUDA tensors:", sum(p.numel() for p in model.parameters()), "parameters, step",
      opt.state_dict()["state"][0]["step"].item())
PY
fail=0
for precision in exact auto; do
	rm -rf "$W/ck" "$W/store" "$W/restored"
	mkdir -p "$W/ck"
	cp -r "$W/orig" "$W/ck/.step-5.tmp"
	"$RR" --cloud none --store "file://$W/store" --checkpoint-dir "$W/ck" --precision $precision \
		-- sh -c "mv '$W/ck/.step-5.tmp' '$W/ck/step-5'" > "$W/persist-$precision.log" 2>&1 || {
		cat "$W/persist-$precision.log"; fail=1; continue; }
	grep -E 'persisted|tensors:' "$W/persist-$precision.log"
	"$RR" restore --store "file://$W/store" --to "$W/restored" > "$W/restore-$precision.log" 2>&1 || {
		cat "$W/restore-$precision.log"; fail=1; continue; }
	"$PY" - "$W/orig" "$W/restored/step-5" "$precision" <<'PY' || fail=1
import os, sys, torch
a, b, precision = sys.argv[1:]
worst = 0.0
for f in ("model.pt", "optimizer.pt"):
    x = torch.load(a + "/" + f, map_location=os.environ.get("RR_DEVICE", "cuda"))
    y = torch.load(b + "/" + f, map_location=os.environ.get("RR_DEVICE", "cuda"))
    def walk(p, q, path):
        global worst
        if torch.is_tensor(p):
            assert q.device.type == os.environ.get("RR_DEVICE", "cuda") and p.dtype == q.dtype and p.shape == q.shape, path
            if precision == "exact" or p.dtype != torch.float32 or p.numel() <= 256 or torch.equal(p, p.round()):
                assert torch.equal(p, q), path + " differs"
            else:
                rel = ((p - q).abs() / p.abs().clamp_min(1e-30))[p != 0].max().item() if (p != 0).any() else 0.0
                worst = max(worst, rel)
                assert rel <= 2 ** -8, "%s: relative error %g" % (path, rel)
        elif isinstance(p, dict):
            for k in p: walk(p[k], q[k], path + "." + str(k))
        elif isinstance(p, (list, tuple)):
            for i, (u, v) in enumerate(zip(p, q)): walk(u, v, path + "[%d]" % i)
        else:
            assert p == q, path
    walk(x, y, f)
print("%s: restored onto the GPU, every tensor as required (worst relative error %g)" % (precision, worst))
PY
done
rm -rf "$W"
exit $fail
