#!/usr/bin/env python3
"""Checks a restored checkpoint against the original, tensor by tensor, with the manifest
that stored it (DESIGN §4's guarantee):
- every file's safetensors header (names, dtypes, shapes, order, __metadata__) is
  byte-identical, and so is every tensor stored exactly and every other file;
- F32 tensors stored as BF16 or scaled FP16: every normal finite value comes back finite
  with relative error at most 2^-8 (BF16, and FP16 values that land in FP16's subnormal range
  after scaling) or 2^-11 (FP16 values in its normal range); signs, zeros, +-Inf and NaN come
  back exactly (bit for bit); no finite value becomes Inf.
Prints a summary line and exits 1 on the first violation.

usage: check_tensors.py ORIGINAL_DIR RESTORED_DIR MANIFEST_JSON
"""
import json
import os
import struct
import sys

import numpy as np


def header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return 8 + n


def main(orig_dir, restored_dir, manifest_path):
    m = json.load(open(manifest_path))
    checked = {"exact_bytes": 0, "lossy_values": 0, "lossy_tensors": 0, "specials": 0}
    worst = {"bf16": 0.0, "fp16-normal": 0.0, "fp16-subnormal": 0.0}
    for fe in m["files"]:
        a = open(os.path.join(orig_dir, fe["path"]), "rb").read()
        b = open(os.path.join(restored_dir, fe["path"]), "rb").read()
        if len(a) != len(b):
            sys.exit(f"FAIL {fe['path']}: size {len(b)} != {len(a)}")
        lossy = [s for s in fe["segments"] if s["encoding"] in ("bf16+shuffle+zstd", "fp16+shuffle+zstd")]
        # Everything outside lossy segments must be byte-identical (headers included).
        pos = 0
        for s in lossy + [{"offset": len(a), "length": 0}]:
            if a[pos:s["offset"]] != b[pos:s["offset"]]:
                sys.exit(f"FAIL {fe['path']}: bytes {pos}..{s['offset']} differ (not a lossy tensor)")
            checked["exact_bytes"] += s["offset"] - pos
            pos = s["offset"] + s["length"]
        if fe["path"].endswith(".safetensors") and a[: header(os.path.join(orig_dir, fe["path"]))] != b[: header(os.path.join(orig_dir, fe["path"]))]:
            sys.exit(f"FAIL {fe['path']}: header differs")
        for s in lossy:
            if s["dtype"] != "F32":
                sys.exit(f"FAIL {s['tensor']}: lossy encoding on {s['dtype']}")
            x = np.frombuffer(a, dtype="<f4", count=s["length"] // 4, offset=s["offset"])
            y = np.frombuffer(b, dtype="<f4", count=s["length"] // 4, offset=s["offset"])
            xb, yb = x.view("<u4"), y.view("<u4")
            special = ~np.isfinite(x) | (x == 0)
            if not np.array_equal(xb[special], yb[special]):
                sys.exit(f"FAIL {s['tensor']}: a zero, Inf or NaN did not come back bit for bit")
            checked["specials"] += int(special.sum())
            finite = np.isfinite(x)
            if not np.isfinite(y[finite]).all():
                sys.exit(f"FAIL {s['tensor']}: a finite value came back non-finite")
            normal = finite & (np.abs(x) >= np.float32(2.0 ** -126))
            xs, ys = x[normal].astype(np.float64), y[normal].astype(np.float64)
            if np.any(np.signbit(xs) != np.signbit(ys)):
                sys.exit(f"FAIL {s['tensor']}: a sign changed")
            rel = np.abs(ys - xs) / np.abs(xs)
            if s["encoding"].startswith("bf16"):
                bound = np.full(rel.shape, 2.0 ** -8)
                kind = "bf16"
            else:
                scaled = np.abs(xs) * 2.0 ** s["scale_exp"]
                bound = np.where(scaled >= 2.0 ** -14, 2.0 ** -11, 2.0 ** -8)
                below = scaled < 2.0 ** -17
                if below.any():  # auto never chooses FP16 then; fp16 mode may flush these
                    sys.exit(f"FAIL {s['tensor']}: value below 2^-17 after scaling in an FP16 tensor")
                kind = "fp16-normal"
                if (scaled < 2.0 ** -14).any():
                    sub = scaled < 2.0 ** -14
                    worst["fp16-subnormal"] = max(worst["fp16-subnormal"], float((rel[sub] / 2.0 ** -8).max()))
            over = rel > bound
            if over.any():
                i = int(np.argmax(over))
                sys.exit(f"FAIL {s['tensor']}: value {xs[i]!r} came back {ys[i]!r}, relative error {rel[i]:.3g} > {bound[i]:.3g}")
            if rel.size:
                worst[kind] = max(worst[kind], float((rel / bound).max()))
            checked["lossy_values"] += int(x.size)
            checked["lossy_tensors"] += 1
    print(f"checked: {checked['lossy_tensors']} lossy tensors, {checked['lossy_values']} values within the bound "
          f"(worst error / bound: bf16 {worst['bf16']:.3f}, fp16 {worst['fp16-normal']:.3f}, "
          f"fp16 subnormal {worst['fp16-subnormal']:.3f}), {checked['specials']} zeros/Inf/NaN exact, "
          f"{checked['exact_bytes']} other bytes identical")


if __name__ == "__main__":
    main(*sys.argv[1:4])
