"""Plain PyTorch with one checkpoint file saved again and again under the same name, as many
training scripts do: torch.save() of model, AdamW and step to a temp name, then os.replace()
onto ckpt.pt (--every steps), resumed from it at start. A small MLP on fixed synthetic data,
seeded, one thread: a run resumed from a step ends bit-identical to one never stopped when the
checkpoint comes back exact (--precision exact).

With --in-place it saves straight to ckpt.pt (nanoGPT's way). With --crash-after K an attempt exits 1 after K steps (its saves made on the way).
On the checkpoint signal (SIGUSR1) it saves at the end of the step and exits 0 if the notice
file says the machine is going. Prints "resumed from step S", "saved step S",
"checkpointed at step S, exiting for preemption" and writes --out (final step, weights'
sha256, loss history's sha256) when it finishes."""
import argparse
import hashlib
import json
import os
import signal
import time

import torch

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=120)
p.add_argument("--every", type=int, default=20)
p.add_argument("--step-time", type=float, default=0.0)
p.add_argument("--crash-after", type=int, default=0,
               help="exit 1 after this many steps of this attempt (a crash after progress)")
p.add_argument("--in-place", action="store_true",
               help="torch.save straight to ckpt.pt, as nanoGPT does (no temp name)")
p.add_argument("--out")
a = p.parse_args()

torch.set_num_threads(1)
torch.manual_seed(0)
ckpt_dir = os.environ["RESUME_RUN_CHECKPOINT_DIR"]
path = os.path.join(ckpt_dir, "ckpt.pt")
asked = []
signal.signal(signal.SIGUSR1, lambda s, f: asked.append(s))

x = torch.randn(512, 16)
y = (x[:, :4].sum(1, keepdim=True) - x[:, 4:5] * x[:, 5:6]).tanh()
model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
step, losses = 0, []

restore = os.environ.get("RESUME_RUN_RESTORE_DIR")
if restore and os.path.isfile(restore):
    state = torch.load(restore)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    step, losses = state["step"], state["losses"]
    print("resumed from step %d" % step, flush=True)


def save():
    state = {"model": model.state_dict(), "opt": opt.state_dict(), "step": step,
             "losses": losses}
    if a.in_place:
        torch.save(state, path)
        print("saved step %d" % step, flush=True)
        return
    tmp = path + ".tmp"
    torch.save(state, tmp)
    os.replace(tmp, path)
    print("saved step %d" % step, flush=True)


def going():
    try:
        with open(os.environ["RESUME_RUN_NOTICE_FILE"]) as f:
            return json.load(f)["kind"] in ("preempt", "terminate")
    except (OSError, ValueError, KeyError):
        return False


first = step
while step < a.steps:
    if a.crash_after and step - first == a.crash_after:
        print("crash at step %d" % step, flush=True)
        raise SystemExit(1)
    i = torch.arange(step * 32, step * 32 + 32) % x.shape[0]
    loss = torch.nn.functional.mse_loss(model(x[i]), y[i])
    opt.zero_grad()
    loss.backward()
    opt.step()
    step += 1
    losses.append(float(loss))
    time.sleep(a.step_time)
    if asked:
        asked.clear()
        save()
        if going():
            print("checkpointed at step %d, exiting for preemption" % step, flush=True)
            raise SystemExit(0)
    elif a.every and step % a.every == 0:
        save()

if a.out:
    w = hashlib.sha256()
    for t in model.state_dict().values():
        w.update(t.numpy().tobytes())
    with open(a.out, "w") as f:
        json.dump({"step": step, "sha256": w.hexdigest(),
                   "loss_history_sha256": hashlib.sha256(
                       json.dumps(losses).encode()).hexdigest()}, f)
