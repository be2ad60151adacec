"""Makes the checkpoints of the benchmarks (scripts/bench_packs.sh, scripts/bench_speed.sh):
deterministic files of tensors with trained-looking values.

usage: bench_make_ckpt.py KIND DIR
  mixed       4 files, ~126 MB of F32, ~310 tensors: per file two 3.6M-element matrices and
              76 small tensors of 256..32768 elements, all normal(0, 0.02)
  mixed-real  what a small transformer's training checkpoint holds, as safetensors: its
              weights (token and position embeddings, attention and MLP matrices and
              biases, LayerNorm weights near 1 and biases near 0) in two shards, and
              AdamW's state (exp_avg, exp_avg_sq, a step per parameter) in two more;
              4 files, ~122 MB of F32, 304 tensors of 320 elements to 10 MB
  hf          the same model and state as an HF Trainer writes them: model.safetensors,
              optimizer.pt (torch.save of AdamW's state_dict()), scheduler.pt,
              rng_state.pth, training_args.bin, trainer_state.json (needs torch)
  large       one large model: GPT-2-medium-shaped weights (355M parameters, 1.4 GB of
              F32) in one model.safetensors, as HF hub checkpoints of that size come
  smalls      one file of 400 tensors under 64 kB (256..16384 elements), ~10 MB
  tiny        one 1 kB file (the fixed cost of a run)
  scale       SIZE_GB (env, default 4) of F32 in files of 1 GB, 64 MB tensors
"""
import json
import os
import sys

import numpy as np

import resume_run


def tensor(rng, n):
    return ("F32", (n,), (rng.standard_normal(n, dtype=np.float32) * 0.02).tobytes())


def gpt_params(vocab, ctx, dim, layers):
    """(name, shape, kind) of a GPT-2-style model's parameters, in its state_dict order."""
    p = [("wte.weight", (vocab, dim), "emb"), ("wpe.weight", (ctx, dim), "emb")]
    for i in range(layers):
        h = f"h.{i}."
        p += [(h + "ln_1.weight", (dim,), "ln_w"), (h + "ln_1.bias", (dim,), "bias"),
              (h + "attn.c_attn.weight", (dim, 3 * dim), "w"), (h + "attn.c_attn.bias", (3 * dim,), "bias"),
              (h + "attn.c_proj.weight", (dim, dim), "w"), (h + "attn.c_proj.bias", (dim,), "bias"),
              (h + "ln_2.weight", (dim,), "ln_w"), (h + "ln_2.bias", (dim,), "bias"),
              (h + "mlp.c_fc.weight", (dim, 4 * dim), "w"), (h + "mlp.c_fc.bias", (4 * dim,), "bias"),
              (h + "mlp.c_proj.weight", (4 * dim, dim), "w"), (h + "mlp.c_proj.bias", (dim,), "bias")]
    return p + [("ln_f.weight", (dim,), "ln_w"), ("ln_f.bias", (dim,), "bias")]


def weight(rng, shape, kind):
    n = int(np.prod(shape))
    if kind == "ln_w":  # LayerNorm gains: near 1 after training
        return 1.0 + rng.standard_normal(n, dtype=np.float32) * np.float32(0.05)
    sigma = {"emb": 0.02, "w": rng.uniform(0.015, 0.04), "bias": 0.01}[kind]
    return rng.standard_normal(n, dtype=np.float32) * np.float32(sigma)


def adam_state(rng, shape, kind):
    """exp_avg and exp_avg_sq as after a few dozen AdamW steps: gradients' running mean and
    mean square, whose scale varies by row (LayerNorm and embedding rows see very different
    gradients), zero for embedding rows no batch touched."""
    n = int(np.prod(shape))
    rows = shape[0] if len(shape) > 1 else 1
    scale = np.exp(rng.standard_normal(rows, dtype=np.float32)).astype(np.float32) * np.float32(1e-3)
    if kind == "emb":
        scale[rng.random(rows) < 0.3] = 0  # tokens no batch held
    scale = np.repeat(scale, n // rows)
    g = rng.standard_normal((4, n), dtype=np.float32) * scale
    exp_avg = g.mean(axis=0, dtype=np.float32) * np.float32(0.3)
    exp_avg_sq = (g * g).mean(axis=0, dtype=np.float32) * np.float32(0.03)
    return exp_avg, exp_avg_sq


def gpt_state(seed, vocab, ctx, dim, layers, optimizer=True):
    """The model's weights and, with optimizer, AdamW's state per parameter index."""
    rng = np.random.default_rng(seed)
    params = gpt_params(vocab, ctx, dim, layers)
    weights = {name: weight(rng, shape, kind).reshape(shape) for name, shape, kind in params}
    state = {}
    if optimizer:
        for i, (name, shape, kind) in enumerate(params):
            m, v = adam_state(rng, shape, kind)
            state[i] = (m.reshape(shape), v.reshape(shape))
    return params, weights, state


def raw(a):
    return ("F32", a.shape, a.astype(np.float32, copy=False).tobytes())


def save_shards(tensors, out, prefix, nshards):
    """tensors (name -> array, in order) split into nshards files of about equal bytes."""
    names = list(tensors)
    total = sum(tensors[n].nbytes for n in names)
    shard, acc, per = 0, 0, {}
    for n in names:
        per.setdefault(shard, {})[n] = raw(tensors[n])
        acc += tensors[n].nbytes
        if acc >= total * (shard + 1) / nshards and shard < nshards - 1:
            shard += 1
    for s, t in per.items():
        resume_run.save_safetensors_raw(
            t, os.path.join(out, f"{prefix}-{s + 1:05d}-of-{nshards:05d}.safetensors"),
            {"format": "pt"})


MIXED_REAL = dict(vocab=8192, ctx=512, dim=320, layers=6)
STEP = 30


def mixed_real(out):
    params, weights, state = gpt_state(20261126, **MIXED_REAL)
    save_shards(weights, out, "model", 2)
    opt = {}
    for i, (name, _, _) in enumerate(params):
        opt[f"state.{name}.exp_avg"] = state[i][0]
        opt[f"state.{name}.exp_avg_sq"] = state[i][1]
        opt[f"state.{name}.step"] = np.array(STEP, dtype=np.float32)
    save_shards(opt, out, "optimizer", 2)


def hf(out):
    import torch  # only this kind needs it

    params, weights, state = gpt_state(20261126, **MIXED_REAL)
    resume_run.save_safetensors_raw({n: raw(a) for n, a in weights.items()},
                                    os.path.join(out, "model.safetensors"), {"format": "pt"})
    opt = {"state": {i: {"step": torch.tensor(float(STEP)), "exp_avg": torch.from_numpy(m),
                         "exp_avg_sq": torch.from_numpy(v)} for i, (m, v) in state.items()},
           "param_groups": [{"lr": 4.5e-4, "betas": (0.9, 0.999), "eps": 1e-08,
                             "weight_decay": 0.01, "amsgrad": False, "foreach": None,
                             "maximize": False, "capturable": False, "differentiable": False,
                             "fused": None, "initial_lr": 5e-4, "params": list(range(len(params)))}]}
    torch.save(opt, os.path.join(out, "optimizer.pt"))
    torch.save({"step_size": 2, "gamma": 0.9, "base_lrs": [5e-4], "last_epoch": STEP,
                "_step_count": STEP + 1, "_get_lr_called_within_step": False,
                "_last_lr": [4.5e-4]}, os.path.join(out, "scheduler.pt"))
    g = torch.Generator().manual_seed(7)
    torch.save({"python": (3, tuple(range(625)), None), "cpu": g.get_state()},
               os.path.join(out, "rng_state.pth"))
    torch.save({"output_dir": "out", "learning_rate": 5e-4, "per_device_train_batch_size": 8,
                "seed": 42}, os.path.join(out, "training_args.bin"))
    with open(os.path.join(out, "trainer_state.json"), "w") as f:
        json.dump({"global_step": STEP, "epoch": 1.0, "log_history":
                   [{"loss": 9.0 - 0.1 * s, "step": s} for s in range(1, STEP + 1)]}, f, indent=2)


def main(kind, out):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20261123)
    if kind == "mixed":
        for f in range(4):
            t = {f"layers.{f}.attn.w": tensor(rng, 3_600_000), f"layers.{f}.mlp.w": tensor(rng, 3_600_000)}
            for i in range(76):
                t[f"layers.{f}.small.{i}"] = tensor(rng, 256 << (i % 8))
            resume_run.save_safetensors_raw(t, os.path.join(out, f"shard-{f}.safetensors"))
    elif kind == "mixed-real":
        mixed_real(out)
    elif kind == "hf":
        hf(out)
    elif kind == "large":
        _, weights, _ = gpt_state(20261127, vocab=50257, ctx=1024, dim=1024, layers=24,
                                  optimizer=False)
        resume_run.save_safetensors_raw({n: raw(a) for n, a in weights.items()},
                                        os.path.join(out, "model.safetensors"), {"format": "pt"})
    elif kind == "smalls":
        t = {f"blocks.{i // 2}.ln.{'weight' if i % 2 == 0 else 'bias'}": tensor(rng, 256 << (i % 7))
             for i in range(400)}
        resume_run.save_safetensors_raw(t, os.path.join(out, "model.safetensors"))
    elif kind == "tiny":
        with open(os.path.join(out, "state.json"), "w") as f:
            f.write(json.dumps({"step": STEP, "pad": "x" * 1000})[:1024])
    elif kind == "scale":
        gb = int(os.environ.get("SIZE_GB", "4"))
        for f in range(gb):
            t = {f"shard{f}.t{i}": tensor(rng, 16 << 20) for i in range(16)}
            resume_run.save_safetensors_raw(t, os.path.join(out, f"shard-{f}.safetensors"))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
