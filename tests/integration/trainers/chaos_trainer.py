"""A small real PyTorch trainer for the chaos soak (tests/integration/test_chaos_soak.sh):
a two-layer MLP with Adam on CPU, one thread, whose batch at step N is drawn from a
generator seeded with N, so that a run resumed from any checkpoint ends bit-identical to an
uninterrupted one when the checkpoint comes back exact.

Every --every steps, and on the checkpoint signal, it saves model, optimizer and step with
torch.save into .step-N.tmp/state.pt and renames the directory to step-N (printing "saving
step-N" first and "commit step-N" after). With the notice file saying the machine is going
it exits 0 after that checkpoint. At --steps it commits the last one, writes --out (the
sha256 of the model's parameters) and exits 0. Resumes from RESUME_RUN_RESTORE_DIR."""
import argparse
import hashlib
import json
import os
import signal
import sys
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, required=True)
p.add_argument("--every", type=int, default=25)
p.add_argument("--step-time", type=float, default=0.004)
p.add_argument("--out", default="")
a = p.parse_args()

torch.set_num_threads(1)
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.Tanh(), torch.nn.Linear(128, 8))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
ckpt_dir = os.environ["RESUME_RUN_CHECKPOINT_DIR"]
asked = []
signal.signal(signal.SIGUSR1, lambda s, f: asked.append(s))

step = 0
restore = os.environ.get("RESUME_RUN_RESTORE_DIR")
if restore:
    state = torch.load(os.path.join(restore, "state.pt"))
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    step = state["step"]
print("training from step %d (attempt %s)" % (step, os.environ.get("RESUME_RUN_ATTEMPT")),
      flush=True)


def going():
    try:
        with open(os.environ["RESUME_RUN_NOTICE_FILE"]) as f:
            return json.load(f)["kind"] in ("preempt", "terminate")
    except (OSError, ValueError, KeyError):
        return False


def save(n):
    print("saving step-%d" % n, flush=True)
    tmp = os.path.join(ckpt_dir, ".step-%d.tmp" % n)
    os.makedirs(tmp, exist_ok=True)
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": n},
               os.path.join(tmp, "state.pt"))
    os.rename(tmp, os.path.join(ckpt_dir, "step-%d" % n))
    print("commit step-%d" % n, flush=True)


while step < a.steps:
    g = torch.Generator().manual_seed(step)
    x = torch.randn(32, 64, generator=g)
    y = torch.randn(32, 8, generator=g)
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    step += 1
    time.sleep(a.step_time)
    if asked or step % a.every == 0 or step == a.steps:
        was_asked = bool(asked)
        asked.clear()
        if not os.path.exists(os.path.join(ckpt_dir, "step-%d" % step)):
            save(step)
        if was_asked and going():
            print("exit for the notice after step-%d" % step, flush=True)
            sys.exit(0)
h = hashlib.sha256()
for t in model.state_dict().values():
    h.update(t.numpy().tobytes())
if a.out:
    with open(a.out, "w") as f:
        json.dump({"step": step, "sha256": h.hexdigest()}, f)
print("done at step %d: %s" % (step, h.hexdigest()), flush=True)
