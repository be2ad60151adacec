#!/usr/bin/env python3
"""A small GPT-style transformer trained with AdamW on synthetic tokens, on the CPU, seeded:
a real PyTorch workload for resume-run's tests and benchmarks (Debian's python3-torch).

Under resume-run it resumes from RESUME_RUN_RESTORE_DIR, checkpoints model and optimizer state
as safetensors through scripts/resume_run.py every --checkpoint-every steps and when asked,
and leaves when the notice says the machine is going. Without resume-run, --save-to DIR
writes one checkpoint at the end (for benchmarks).

Sizes: --dim 512 --layers 6 --vocab 8192 is about 27M parameters (the yardstick of
docs/performance.md, "How fast").
"""
import argparse
import hashlib
import json
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import resume_run  # noqa: E402


class TinyGPT(nn.Module):
    def __init__(self, vocab, dim, layers, heads, seq):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.zeros(seq, dim))
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, layers)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        mask = torch.triu(torch.full((seq, seq), float("-inf")), diagonal=1)
        self.register_buffer("mask", mask, persistent=False)

    def forward(self, x):
        h = self.tok(x) + self.pos[: x.shape[1]]
        h = self.blocks(h, mask=self.mask[: x.shape[1], : x.shape[1]])
        return self.head(self.norm(h))


def batch(step, args):
    """Deterministic synthetic data: the batch depends only on the seed and the step."""
    g = torch.Generator().manual_seed(args.seed * 1_000_003 + step)
    # A learnable pattern: next token = (token * 7 + 3) % vocab, with noise.
    x = torch.randint(0, args.vocab, (args.batch, args.seq), generator=g)
    y = (x * 7 + 3) % args.vocab
    noise = torch.rand(x.shape, generator=g) < 0.1
    y[noise] = torch.randint(0, args.vocab, (int(noise.sum()),), generator=g)
    return x, y


def weights_sha256(model):
    h = hashlib.sha256()
    for name, t in sorted(model.state_dict().items()):
        h.update(name.encode())
        h.update(t.detach().contiguous().numpy().tobytes())
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=40)
    ap.add_argument("--vocab", type=int, default=2048)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1: deterministic)")
    ap.add_argument("--checkpoint-every", type=int, default=0)
    ap.add_argument("--save-to", help="write model/optimizer safetensors here at the end")
    ap.add_argument("--out", help="write final step, loss and weights sha256 here as JSON")
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    model = TinyGPT(args.vocab, args.dim, args.layers, args.heads, args.seq)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    start, losses = 0, []

    under_agent = "RESUME_RUN_CHECKPOINT_DIR" in os.environ
    ckpt = resume_run.Checkpointer() if under_agent else None
    restore = resume_run.restore_dir()
    if restore:
        model.load_state_dict(resume_run.load_state_dict(os.path.join(restore, "model.safetensors")))
        opt.load_state_dict(resume_run.load_state_dict(os.path.join(restore, "optimizer.safetensors")))
        state = json.load(open(os.path.join(restore, "state.json")))
        start, losses = state["step"], state["losses"]
        print(f"resumed from step {start}", flush=True)

    def save(directory, step):
        resume_run.save_state_dict(model.state_dict(), os.path.join(directory, "model.safetensors"))
        resume_run.save_state_dict(opt.state_dict(), os.path.join(directory, "optimizer.safetensors"))
        with open(os.path.join(directory, "state.json"), "w") as f:
            json.dump({"step": step, "losses": losses}, f)

    loss_fn = nn.CrossEntropyLoss()
    for step in range(start, args.steps):
        x, y = batch(step, args)
        loss = loss_fn(model(x).reshape(-1, args.vocab), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
        done = step + 1
        if ckpt and (ckpt.requested() or (args.checkpoint_every and done % args.checkpoint_every == 0)):
            with ckpt.commit(f"step-{done}") as d:
                save(d, done)
            print(f"checkpoint step-{done} loss {losses[-1]:.6f}", flush=True)
            if ckpt.should_exit():
                print(f"checkpointed at step {done}, exiting for preemption", flush=True)
                return 0
    if args.save_to:
        os.makedirs(args.save_to, exist_ok=True)
        save(args.save_to, args.steps)
    result = {"step": args.steps, "loss": losses[-1] if losses else None,
              "sha256": weights_sha256(model)}
    print(f"done step {args.steps} loss {result['loss']:.6f} sha256 {result['sha256']}", flush=True)
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
