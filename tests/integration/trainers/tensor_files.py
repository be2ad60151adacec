"""Commits safetensors checkpoints with hand-made tensors, for the tensor-encoding tests.

usage: tensor_files.py MODE
  specials      step-1: tensors full of +-0, +-Inf, canonical NaN, subnormals, huge and tiny
                values, and one with a NaN that has a payload (must be stored exact)
  incremental   step-1: ten 1 MiB F32 tensors; step-2: the same with two of them changed
  invalid       step-1: a .safetensors file with a trailing byte (must be stored byte-exact)
  smalls        step-1: 300 small F32 tensors (1-16k elements, as LayerNorm weights and
                biases) and one of 2 MiB; step-2: the same with one small tensor changed
"""
import os
import struct
import sys

import resume_run


def f32(values):
    return ("F32", (len(values),), struct.pack(f"<{len(values)}f", *values))


def f32_bits(bits):
    return ("F32", (len(bits),), struct.pack(f"<{len(bits)}I", *bits))


def commit(ck, name, files):
    with ck.commit(name) as d:
        for fname, tensors in files.items():
            resume_run.save_safetensors_raw(tensors, os.path.join(d, fname), {"note": "hand-made"})
    print(f"committed {name}", flush=True)


def main(mode):
    ck = resume_run.Checkpointer()
    if mode == "specials":
        inf, nan = float("inf"), float("nan")
        commit(ck, "step-1", {"t.safetensors": {
            "specials": f32([0.0, -0.0, inf, -inf, nan, 1.0, -1.0, 3.4028234e38, -3.4028234e38,
                             1e-30, 2.0 ** -126, 65504.0, 1e-3, 0.1, 7.5] * 1000),
            "negnan": f32_bits([0xFFC00000, 0x3F800000, 0x80000000] * 1000),
            "subnormals": f32_bits([1, 2, 0x007FFFFF, 0x80000001, 0x3F800000] * 1000),
            "payload_nan": f32_bits([0x7FC00001, 0x3F800000] * 1000),
            "ints": ("I64", (3,), struct.pack("<3q", -1, 0, 2 ** 62)),
            "half": ("F16", (2,), struct.pack("<2H", 0x3C00, 0x7E00)),
            "empty": ("F32", (0, 4), b""),
        }})
    elif mode == "incremental":
        def tensors(changed):
            out = {}
            for i in range(10):
                seed = 1000 + i + (7 if i in changed else 0)
                vals = [((seed * 2654435761 + j * 40503) % 65536 - 32768) / 3276.8 for j in range(262144)]
                out[f"layer{i}.weight"] = f32(vals)
            return out
        commit(ck, "step-1", {"model.safetensors": tensors(set())})
        commit(ck, "step-2", {"model.safetensors": tensors({3, 7})})
    elif mode == "smalls":
        def tensors(changed):
            out = {}
            for i in range(300):
                n = 256 * (1 + (i * 7919) % 64)
                seed = 5000 + i + (11 if i == changed else 0)
                vals = [((seed * 2654435761 + j * 40503) % 65536 - 32768) / 3276.8 for j in range(n)]
                out[f"block{i // 2}.ln.{'weight' if i % 2 == 0 else 'bias'}"] = f32(vals)
            out["big.weight"] = f32([(j % 1000) / 7.0 for j in range(524288)])
            return out
        commit(ck, "step-1", {"model.safetensors": tensors(-1)})
        commit(ck, "step-2", {"model.safetensors": tensors(150)})
    elif mode == "invalid":
        with ck.commit("step-1") as d:
            p = os.path.join(d, "bad.safetensors")
            resume_run.save_safetensors_raw({"w": f32([1.0, 2.0])}, p)
            with open(p, "ab") as f:
                f.write(b"\0")
        print("committed step-1", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
