#!/usr/bin/env python3
"""Checks a restored checkpoint against the original, tensor by tensor, with the manifest
that stored it (the guarantee in docs/how-it-works.md, "How checkpoints are made small"):
- every file's safetensors header (names, dtypes, shapes, order, __metadata__) is
  byte-identical, and so is every tensor stored exactly and every other file;
- F32 tensors stored as BF16 or scaled FP16: every normal finite value comes back finite
  with relative error at most 2^-8 (BF16, and FP16 values that land in FP16's subnormal range
  after scaling) or 2^-11 (FP16 values in its normal range); signs, zeros, +-Inf and NaN come
  back exactly (bit for bit); no finite value becomes Inf. No tensor of at most 256
  elements and none whose finite values are all integers (Adam's step, position ids) is
  stored lossy, under any --precision: those come back bit for bit.
torch.save files (manifest "format": "torch") also: the only other bytes that may differ are
the CRC-32 fields of records stored lossy, zipfile's testzip() passes on the restored file,
torch.load accepts it (with weights_only=True too when the original loads that way), and
walking both loaded objects (dicts, lists, tuples, objects' __dict__) finds the same
structure, equal non-tensor values, tensors of the same dtype and shape, equal unless F32,
and F32 values within 2^-8 relative error (normals), exact zeros, Inf and NaN.
Prints a summary line and exits 1 on the first violation.

usage: check_tensors.py ORIGINAL_DIR RESTORED_DIR MANIFEST_JSON
"""
import io
import json
import math
import os
import struct
import sys
import zipfile

import numpy as np


def header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return 8 + n


def crc_windows(a, b):
    """Byte positions that may differ in a restored torch.save file: 4-byte fields that hold
    an entry's original CRC-32 in the original and its new CRC-32 in the restored file."""
    za, zb = zipfile.ZipFile(io.BytesIO(a)), zipfile.ZipFile(io.BytesIO(b))
    ok = set()
    for ia, ib in zip(za.infolist(), zb.infolist()):
        if ia.filename != ib.filename:
            sys.exit(f"FAIL zip entries differ: {ia.filename} / {ib.filename}")
        if ia.CRC == ib.CRC:
            continue
        old, new = struct.pack("<I", ia.CRC), struct.pack("<I", ib.CRC)
        at = a.find(old)
        while at >= 0:
            if b[at:at + 4] == new:
                ok.update(range(at, at + 4))
            at = a.find(old, at + 1)
    return ok


def load(path, data, weights_only):
    import torch
    kw = {"weights_only": True} if weights_only else {}
    return torch.load(io.BytesIO(data), map_location="cpu", **kw)


def walk(x, y, where, stats):
    import torch
    if isinstance(x, torch.Tensor):
        if not isinstance(y, torch.Tensor) or x.dtype != y.dtype or x.shape != y.shape:
            sys.exit(f"FAIL {where}: tensor {x.dtype}{tuple(x.shape)} came back as {type(y)}")
        stats["tensors"] += 1
        if x.dtype != torch.float32:
            if not torch.equal(x, y):
                sys.exit(f"FAIL {where}: {x.dtype} tensor changed")
            return
        xa = x.detach().contiguous().view(-1).numpy().astype(np.float64)
        ya = y.detach().contiguous().view(-1).numpy().astype(np.float64)
        special = ~np.isfinite(xa) | (xa == 0)
        if not np.array_equal(xa[special], ya[special], equal_nan=True):
            sys.exit(f"FAIL {where}: a zero, Inf or NaN changed")
        normal = np.isfinite(xa) & (np.abs(xa) >= 2.0 ** -126)
        if normal.any():
            rel = np.abs(ya[normal] - xa[normal]) / np.abs(xa[normal])
            if rel.max() > 2.0 ** -8:
                sys.exit(f"FAIL {where}: relative error {rel.max():.3g} > 2^-8")
            stats["worst"] = max(stats["worst"], float(rel.max()))
        stats["values"] += xa.size
    elif isinstance(x, dict):
        if not isinstance(y, dict) or list(x.keys()) != list(y.keys()):
            sys.exit(f"FAIL {where}: dict keys differ")
        for k in x:
            walk(x[k], y[k], f"{where}[{k!r}]", stats)
    elif isinstance(x, (list, tuple)):
        if type(x) is not type(y) or len(x) != len(y):
            sys.exit(f"FAIL {where}: {type(x).__name__} of {len(x)} differs")
        for i, (u, v) in enumerate(zip(x, y)):
            walk(u, v, f"{where}[{i}]", stats)
    elif isinstance(x, np.ndarray):
        if not isinstance(y, np.ndarray) or not np.array_equal(x, y):
            sys.exit(f"FAIL {where}: array changed")
        stats["leaves"] += 1
    elif hasattr(x, "__dict__") and not isinstance(x, type):
        walk(vars(x), vars(y), f"{where}.__dict__", stats)
    else:
        same = x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))
        if not same:
            sys.exit(f"FAIL {where}: {x!r} came back {y!r}")
        stats["leaves"] += 1


def check_torch(path, a, b, checked):
    bad = zipfile.ZipFile(io.BytesIO(b)).testzip()
    if bad is not None:
        sys.exit(f"FAIL {path}: zip CRC check fails for {bad}")
    try:
        x = load(path, a, True)
        weights_only = True
    except Exception:  # the original needs full unpickling (e.g. Python RNG state)
        x = load(path, a, False)
        weights_only = False
    try:
        y = load(path, b, weights_only)
    except Exception as e:
        sys.exit(f"FAIL {path}: torch.load(weights_only={weights_only}) refuses the restored file: {e}")
    stats = {"tensors": 0, "values": 0, "leaves": 0, "worst": 0.0}
    walk(x, y, os.path.basename(path), stats)
    checked["torch_files"] += 1
    checked["torch_weights_only"] += int(weights_only)
    checked["torch_tensors"] += stats["tensors"]
    checked["torch_worst"] = max(checked["torch_worst"], stats["worst"])


def main(orig_dir, restored_dir, manifest_path):
    m = json.load(open(manifest_path))
    checked = {"exact_bytes": 0, "lossy_values": 0, "lossy_tensors": 0, "specials": 0,
               "torch_files": 0, "torch_weights_only": 0, "torch_tensors": 0, "torch_worst": 0.0}
    worst = {"bf16": 0.0, "fp16-normal": 0.0, "fp16-subnormal": 0.0}
    for fe in m["files"]:
        a = open(os.path.join(orig_dir, fe["path"]), "rb").read()
        b = open(os.path.join(restored_dir, fe["path"]), "rb").read()
        if len(a) != len(b):
            sys.exit(f"FAIL {fe['path']}: size {len(b)} != {len(a)}")
        lossy = [s for s in fe["segments"] if s["encoding"] in ("bf16+shuffle+zstd", "fp16+shuffle+zstd")]
        crc_ok = crc_windows(a, b) if fe.get("format") == "torch" else set()
        # Everything outside lossy segments must be byte-identical (headers included), but
        # for a torch.save file's recomputed CRC-32 fields.
        pos = 0
        for s in lossy + [{"offset": len(a), "length": 0}]:
            if a[pos:s["offset"]] != b[pos:s["offset"]]:
                bad = [i for i in range(pos, s["offset"]) if a[i] != b[i] and i not in crc_ok]
                if bad:
                    sys.exit(f"FAIL {fe['path']}: byte {bad[0]} differs (not a lossy tensor or a CRC)")
            checked["exact_bytes"] += s["offset"] - pos
            pos = s["offset"] + s["length"]
        if fe.get("format") == "torch":
            check_torch(os.path.join(orig_dir, fe["path"]), a, b, checked)
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
            if x.size <= 256:
                sys.exit(f"FAIL {s['tensor']}: a tensor of {x.size} elements stored lossy")
            if np.array_equal(np.trunc(x[finite]), x[finite]):
                sys.exit(f"FAIL {s['tensor']}: an integer-valued tensor stored lossy")
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
    if checked["torch_files"]:
        print(f"torch.save: {checked['torch_files']} files load and pass testzip "
              f"({checked['torch_weights_only']} with weights_only=True), {checked['torch_tensors']} "
              f"tensors compared, worst F32 relative error {checked['torch_worst']:.3g}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
