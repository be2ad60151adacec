"""Makes the checkpoints of the packs and scale benchmarks (scripts/bench_packs.sh):
deterministic safetensors files of F32 tensors with trained-looking values.

usage: bench_make_ckpt.py KIND DIR
  mixed    4 files, ~126 MB of F32, ~310 tensors: per file two 3.6M-element matrices and
           76 small tensors of 256..32768 elements (LayerNorm weights and biases, embeddings)
  smalls   one file of 400 tensors under 64 kB (256..16384 elements), ~10 MB
  scale    SIZE_GB (env, default 4) of F32 in files of 1 GB, 64 MB tensors
"""
import os
import sys

import numpy as np

import resume_run


def tensor(rng, n):
    return ("F32", (n,), (rng.standard_normal(n, dtype=np.float32) * 0.02).tobytes())


def main(kind, out):
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20261123)
    if kind == "mixed":
        for f in range(4):
            t = {f"layers.{f}.attn.w": tensor(rng, 3_600_000), f"layers.{f}.mlp.w": tensor(rng, 3_600_000)}
            for i in range(76):
                t[f"layers.{f}.small.{i}"] = tensor(rng, 256 << (i % 8))
            resume_run.save_safetensors_raw(t, os.path.join(out, f"shard-{f}.safetensors"))
    elif kind == "smalls":
        t = {f"blocks.{i // 2}.ln.{'weight' if i % 2 == 0 else 'bias'}": tensor(rng, 256 << (i % 7))
             for i in range(400)}
        resume_run.save_safetensors_raw(t, os.path.join(out, "model.safetensors"))
    elif kind == "scale":
        gb = int(os.environ.get("SIZE_GB", "4"))
        for f in range(gb):
            t = {f"shard{f}.t{i}": tensor(rng, 16 << 20) for i in range(16)}
            resume_run.save_safetensors_raw(t, os.path.join(out, f"shard-{f}.safetensors"))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
