#!/usr/bin/env python3
"""A small DDP trainer (gloo, CPU) for the multi-node test, started by torchrun on each node.

Every rank learns of a checkpoint request from its own agent, at slightly different steps;
resume_run.agree() all-reduces the flags so all ranks checkpoint the same step and exit
together. Each rank checkpoints into its own node's RESUME_RUN_CHECKPOINT_DIR (the model,
the optimizer state, the step and the loss history, with torch.save), and restores from its
node's RESUME_RUN_RESTORE_DIR. At the end it writes the sha256 of the weights and of the loss
history, to compare with an uninterrupted run.
"""
import argparse
import hashlib
import json
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

import resume_run as rr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--step-time", type=float, default=0.0)
    ap.add_argument("--checkpoint-every", type=int, default=0)
    ap.add_argument("--ballast-mb", type=int, default=0, help="extra random bytes per checkpoint")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()

    ck = rr.Checkpointer()  # first: the handler (a flag only)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(16, 32), nn.Tanh(),
                                                              nn.Linear(32, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    step, losses = 0, []
    d = rr.restore_dir()
    if d:
        state = torch.load(os.path.join(d, "state.pt"))
        model.module.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        step, losses = state["step"], state["losses"]
        print("rank %d restored step %d" % (rank, step), flush=True)
    while step < a.steps:
        step += 1
        g = torch.Generator().manual_seed(step * 1000 + rank)
        x = torch.randn(8, 16, generator=g)
        y = torch.randn(8, 4, generator=g)
        opt.zero_grad()
        loss = ((model(x) - y) ** 2).mean()
        loss.backward()
        opt.step()
        losses.append(float(loss.item()))
        if a.step_time:
            time.sleep(a.step_time)
        asked, leave = rr.agree(ck)
        if asked or (a.checkpoint_every and step % a.checkpoint_every == 0):
            with ck.commit("step-%d" % step) as tmp:
                torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(),
                            "step": step, "losses": losses}, os.path.join(tmp, "state.pt"))
                if a.ballast_mb:
                    with open(os.path.join(tmp, "ballast.bin"), "wb") as f:
                        f.write(os.urandom(a.ballast_mb << 20))
        if asked and leave:
            print("rank %d checkpointed at step %d, exiting for preemption" % (rank, step),
                  flush=True)
            dist.barrier()
            return 0
    h = hashlib.sha256()
    for t in model.module.state_dict().values():
        h.update(t.detach().contiguous().numpy().tobytes())
    with open(a.out, "w") as f:
        json.dump({"sha256": h.hexdigest(), "step": step,
                   "loss_history_sha256": hashlib.sha256(json.dumps(losses).encode()).hexdigest()},
                  f)
    dist.barrier()
    return 0


if __name__ == "__main__":
    rc = main()
    sys.stdout.flush()
    # No gloo teardown: Debian torch 1.13's can hang at exit; the barrier above ended the work.
    os._exit(rc)
