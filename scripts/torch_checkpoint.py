#!/usr/bin/env python3
"""Writes the checkpoints people make with torch.save, from a real training run of the
bench's transformer (scripts/train_transformer.py's TinyGPT, AdamW, StepLR):

- HF-Trainer-shaped: model.safetensors, optimizer.pt (AdamW's state_dict()), scheduler.pt,
  rng_state.pth (python, numpy and torch RNG states), trainer_state.json;
- Lightning-shaped: lightning.ckpt, a dict with state_dict, optimizer_states,
  lr_schedulers, epoch, global_step, callbacks, loops, hyper_parameters (taken one training
  step later, so its tensors are not the HF files' tensors again).

With --layout safetensors the same tensors are written as safetensors instead
(optimizer.safetensors, lightning.safetensors through scripts/resume_run.py's
save_state_dict), for comparing the two encodings on the same values.

usage: torch_checkpoint.py --out DIR [--layout torch|safetensors|both] [model sizes]
"""
import argparse
import json
import os
import random
import sys

import numpy as np
import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import resume_run  # noqa: E402
from train_transformer import TinyGPT, batch  # noqa: E402


def train(args):
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    np.random.seed(args.seed)
    model = TinyGPT(args.vocab, args.dim, args.layers, args.heads, args.seq)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.9)
    loss_fn = nn.CrossEntropyLoss()
    losses = []

    def step(i):
        x, y = batch(i, args)
        loss = loss_fn(model(x).reshape(-1, args.vocab), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())

    for i in range(args.steps):
        step(i)
    hf = {
        "model": {k: v.clone() for k, v in model.state_dict().items()},
        "optimizer": _clone(opt.state_dict()),
        "scheduler": sched.state_dict(),
        "rng": {"python": random.getstate(), "numpy": np.random.get_state(),
                "cpu": torch.random.get_rng_state()},
        "trainer_state": {"global_step": args.steps, "epoch": 1.0,
                          "log_history": [{"step": i + 1, "loss": l} for i, l in enumerate(losses)]},
    }
    step(args.steps)
    lightning = {
        "epoch": 1,
        "global_step": args.steps + 1,
        "pytorch-lightning_version": "2.1.0",
        "state_dict": model.state_dict(),
        "loops": {"fit_loop": {"state_dict": {}, "epoch_progress": {"total": {"ready": 2, "completed": 1}},
                               "epoch_loop.batch_progress": {"total": {"ready": args.steps + 1}}}},
        "callbacks": {"ModelCheckpoint{'monitor': 'val_loss', 'mode': 'min'}": {
            "best_model_score": torch.tensor(losses[-1]), "best_k_models": {"a.ckpt": torch.tensor(1.5)},
            "kth_value": torch.tensor(float("inf")), "dirpath": "/ckpt"}},
        "optimizer_states": [opt.state_dict()],
        "lr_schedulers": [sched.state_dict()],
        "hparams_name": "kwargs",
        "hyper_parameters": {"dim": args.dim, "layers": args.layers, "lr": args.lr},
    }
    return hf, lightning


def _clone(x):
    if isinstance(x, torch.Tensor):
        return x.clone()
    if isinstance(x, dict):
        return {k: _clone(v) for k, v in x.items()}
    if isinstance(x, list):
        return [_clone(v) for v in x]
    return x


def write_torch(d, hf, lightning):
    resume_run.save_state_dict(hf["model"], os.path.join(d, "model.safetensors"))
    torch.save(hf["optimizer"], os.path.join(d, "optimizer.pt"))
    torch.save(hf["scheduler"], os.path.join(d, "scheduler.pt"))
    torch.save(hf["rng"], os.path.join(d, "rng_state.pth"))
    with open(os.path.join(d, "trainer_state.json"), "w") as f:
        json.dump(hf["trainer_state"], f)
    torch.save(lightning, os.path.join(d, "lightning.ckpt"))


def write_safetensors(d, hf, lightning):
    resume_run.save_state_dict(hf["model"], os.path.join(d, "model.safetensors"))
    resume_run.save_state_dict(hf["optimizer"], os.path.join(d, "optimizer.safetensors"))
    with open(os.path.join(d, "scheduler.json"), "w") as f:
        json.dump(hf["scheduler"], f)
    resume_run.save_state_dict({"cpu": hf["rng"]["cpu"]}, os.path.join(d, "rng_state.safetensors"))
    with open(os.path.join(d, "trainer_state.json"), "w") as f:
        json.dump(hf["trainer_state"], f)
    resume_run.save_state_dict({"state_dict": lightning["state_dict"],
                                "optimizer_states": lightning["optimizer_states"]},
                               os.path.join(d, "lightning.safetensors"))


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--layout", choices=("torch", "safetensors", "both"), default="torch")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=1e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    return ap.parse_args(argv)


def main():
    args = parse_args()
    hf, lightning = train(args)
    layouts = ("torch", "safetensors") if args.layout == "both" else (args.layout,)
    for layout in layouts:
        d = os.path.join(args.out, layout) if args.layout == "both" else args.out
        os.makedirs(d, exist_ok=True)
        (write_torch if layout == "torch" else write_safetensors)(d, hf, lightning)
    return 0


if __name__ == "__main__":
    sys.exit(main())
