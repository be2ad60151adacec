#!/usr/bin/env python3
"""Deterministic example trainer for resume-run (standard library only).

A tiny MLP (8 inputs, 16 ReLU hidden units, 1 output) learns a fixed synthetic regression task
with plain minibatch SGD.  Every weight is rounded to float32 after each update, so the weights
in memory are exactly the F32 values written to `model.safetensors`; the minibatch sampler's
random state goes to `state.json`.  A run stopped at any step and resumed from its checkpoint
therefore ends bit-identical to a run that was never stopped (as long as the store keeps the
F32 tensors exact: run the agent with `--precision exact` or `--exact '*'` for that check).

    resume-run -- python3 scripts/example_trainer.py --steps 2000 --step-time 0.05

Output lines (stdout): "resumed from step S", "checkpoint step-S",
"checkpointed at step S, exiting for preemption", "done step N sha256 HEX loss L".
"""

import argparse
import hashlib
import json
import os
import random
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import resume_run  # noqa: E402

N_IN, N_HIDDEN = 8, 16
N_SAMPLES = 256
BATCH = 8
LR = 0.02
# Canonical order of the parameters (also the order hashed for --out).
SHAPES = (("fc1.weight", (N_HIDDEN, N_IN)), ("fc1.bias", (N_HIDDEN,)),
          ("fc2.weight", (1, N_HIDDEN)), ("fc2.bias", (1,)))


def f32(x):
    """Round a Python float to the nearest float32 value."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def make_dataset(seed):
    """Fixed synthetic regression data; depends only on the seed, never saved."""
    rng = random.Random(seed * 7919 + 1)
    coef = [rng.uniform(-1.0, 1.0) for _ in range(N_IN)]
    xs, ys = [], []
    for _ in range(N_SAMPLES):
        x = [rng.uniform(-1.0, 1.0) for _ in range(N_IN)]
        y = sum(c * v for c, v in zip(coef, x)) + 0.5 * x[0] * x[1] - 0.3 * abs(x[2])
        xs.append(x)
        ys.append(y + rng.gauss(0.0, 0.01))
    return xs, ys


def init_params(seed):
    rng = random.Random(seed)
    params = {}
    for name, shape in SHAPES:
        fan_in = shape[-1] if name.endswith("weight") else 1
        scale = (1.0 / fan_in) ** 0.5 if name.endswith("weight") else 0.0
        count = 1
        for d in shape:
            count *= d
        params[name] = [f32(rng.uniform(-scale, scale)) for _ in range(count)]
    return params


def forward(params, x):
    w1, b1, w2, b2 = (params[n] for n, _ in SHAPES)
    h = []
    for j in range(N_HIDDEN):
        row = w1[j * N_IN:(j + 1) * N_IN]
        h.append(max(0.0, sum(w * v for w, v in zip(row, x)) + b1[j]))
    return h, sum(w * v for w, v in zip(w2, h)) + b2[0]


def sgd_step(params, xs, ys, batch):
    """One SGD step on the examples `batch`; weights stay float32-rounded. Returns the loss."""
    w2 = params["fc2.weight"]
    g = {n: [0.0] * len(params[n]) for n, _ in SHAPES}
    loss = 0.0
    for i in batch:
        x, y = xs[i], ys[i]
        h, out = forward(params, x)
        err = out - y
        loss += err * err
        d_out = 2.0 * err / len(batch)
        g["fc2.bias"][0] += d_out
        for j in range(N_HIDDEN):
            g["fc2.weight"][j] += d_out * h[j]
            if h[j] > 0.0:
                d_h = d_out * w2[j]
                g["fc1.bias"][j] += d_h
                base = j * N_IN
                for k in range(N_IN):
                    g["fc1.weight"][base + k] += d_h * x[k]
    for name, _ in SHAPES:
        p, gp = params[name], g[name]
        for k in range(len(p)):
            p[k] = f32(p[k] - LR * gp[k])
    return loss / len(batch)


def full_loss(params, xs, ys):
    return sum((forward(params, x)[1] - y) ** 2 for x, y in zip(xs, ys)) / len(xs)


def weight_bytes(params, name):
    return struct.pack("<%df" % len(params[name]), *params[name])


def weights_sha256(params):
    h = hashlib.sha256()
    for name, _ in SHAPES:
        h.update(weight_bytes(params, name))
    return h.hexdigest()


def save_checkpoint(directory, params, state):
    tensors = {name: ("F32", shape, weight_bytes(params, name)) for name, shape in SHAPES}
    resume_run.save_safetensors_raw(tensors, os.path.join(directory, "model.safetensors"),
                                    {"step": str(state["step"])})
    version, internal, gauss_next = state["rng"].getstate()
    doc = {"step": state["step"], "seed": state["seed"],
           "rng_state": [version, list(internal), gauss_next],
           "loss_history": state["loss_history"]}
    with open(os.path.join(directory, "state.json"), "w") as f:
        json.dump(doc, f)


def load_checkpoint(directory):
    tensors, _ = resume_run.load_safetensors_raw(os.path.join(directory, "model.safetensors"))
    params = {}
    for name, shape in SHAPES:
        dtype, got_shape, data = tensors[name]
        if dtype != "F32" or tuple(got_shape) != shape:
            raise ValueError("%s: expected F32 %r, found %s %r" % (name, shape, dtype, got_shape))
        params[name] = list(struct.unpack("<%df" % (len(data) // 4), data))
    with open(os.path.join(directory, "state.json")) as f:
        doc = json.load(f)
    rng = random.Random()
    version, internal, gauss_next = doc["rng_state"]
    rng.setstate((version, tuple(internal), gauss_next))
    state = {"step": doc["step"], "seed": doc["seed"], "rng": rng,
             "loss_history": doc["loss_history"]}
    return params, state


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=200, help="train until this step (200)")
    ap.add_argument("--step-time", type=float, default=0.02,
                    help="seconds to sleep per step, to make drills possible (0.02)")
    ap.add_argument("--checkpoint-every", type=int, default=50,
                    help="commit a checkpoint every K steps; 0 = only when asked (50)")
    ap.add_argument("--keep-local", type=int, default=2,
                    help="committed local checkpoints to keep; 0 = keep all (2)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", help="write the final step, weight sha256 and loss here as JSON")
    ap.add_argument("--fail-at-step", type=int, default=None,
                    help="exit with status 3 at this step, on the first attempt only")
    args = ap.parse_args(argv)

    ck = resume_run.Checkpointer()  # first: the agent signals only processes with a handler
    xs, ys = make_dataset(args.seed)
    where = resume_run.restore_dir()
    if where:
        params, state = load_checkpoint(where)
        if state["seed"] != args.seed:
            raise SystemExit("checkpoint was made with --seed %d" % state["seed"])
        print("resumed from step %d" % state["step"], flush=True)
    else:
        params = init_params(args.seed)
        state = {"step": 0, "seed": args.seed, "rng": random.Random(args.seed + 1),
                 "loss_history": []}
    print("training from step %d to %d (attempt %d)"
          % (state["step"], args.steps, resume_run.attempt()), flush=True)

    committed = state["step"] if where else None

    def commit():
        nonlocal committed
        with ck.commit("step-%d" % state["step"]) as tmp:
            save_checkpoint(tmp, params, state)
        committed = state["step"]
        print("checkpoint step-%d" % state["step"], flush=True)
        if args.keep_local > 0:
            ck.prune(args.keep_local)

    while state["step"] < args.steps:
        batch = [state["rng"].randrange(N_SAMPLES) for _ in range(BATCH)]
        loss = sgd_step(params, xs, ys, batch)
        state["step"] += 1
        state["loss_history"].append(loss)
        step = state["step"]
        if args.step_time > 0:
            time.sleep(args.step_time)
        if args.fail_at_step == step and resume_run.attempt() == 0:
            print("simulated failure at step %d" % step, file=sys.stderr, flush=True)
            sys.exit(3)
        asked = ck.requested()
        if asked or (args.checkpoint_every > 0 and step % args.checkpoint_every == 0):
            commit()
            # After any commit: a request that came after requested() looked is cleared by
            # this commit (it answers the request), so `asked` alone would miss it.
            if ck.should_exit():
                print("checkpointed at step %d, exiting for preemption" % step, flush=True)
                return 0

    if committed != state["step"]:
        commit()  # the final state is always a committed checkpoint
    sha = weights_sha256(params)
    final = full_loss(params, xs, ys)
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"step": state["step"], "sha256": sha, "loss": final,
                       "loss_history_sha256": hashlib.sha256(
                           json.dumps(state["loss_history"]).encode()).hexdigest()}, f)
    print("done step %d sha256 %s loss %.9g" % (state["step"], sha, final), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
