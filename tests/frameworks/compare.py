"""Checks for the real-framework tests.

compare.py weights A B    print the largest difference between two weight files (safetensors)
compare.py bound SAVED RESTORED
    RESTORED (a checkpoint restored under --precision auto) against SAVED (the trainer's own):
    the same files; in safetensors and torch.save files every F32 value within the
    documented bound (relative error at most 2^-8; signs, zeros, Inf and NaN exact) and every
    other tensor and value exact; any other file byte-identical. Prints what it compared.
Several checks may follow one another on one command line (one start of torch, which costs
seconds): compare.py bound SAVED RESTORED weights A B prints one line for each, in order.
"""
import math
import os
import sys
import zipfile

import torch

import resume_run

BOUND = 2.0 ** -8


class Tally:
    def __init__(self):
        self.f32 = self.rounded = self.exact = self.files = 0
        self.worst = 0.0


def check_tensor(a, b, where, tally):
    if a.dtype != b.dtype or a.shape != b.shape:
        raise AssertionError("%s: %s%s became %s%s" % (where, a.dtype, tuple(a.shape), b.dtype, tuple(b.shape)))
    if a.dtype != torch.float32:
        if not torch.equal(a, b):
            raise AssertionError("%s: a %s tensor changed" % (where, a.dtype))
        tally.exact += 1
        return
    tally.f32 += 1
    a, b = a.flatten().double(), b.flatten().double()
    same = (a == b) | (torch.isnan(a) & torch.isnan(b))
    if bool(same.all()):
        tally.exact += 1
        return
    tally.rounded += 1
    finite = torch.isfinite(a) & (a != 0)
    if not bool((same | finite).all()):
        raise AssertionError("%s: a zero, Inf or NaN changed" % where)
    if bool((torch.sign(a[finite]) != torch.sign(b[finite])).any()):
        raise AssertionError("%s: a sign changed" % where)
    rel = ((a - b).abs() / a.abs())[finite & (a.abs() >= 2.0 ** -126)]
    worst = float(rel.max()) if rel.numel() else 0.0
    tally.worst = max(tally.worst, worst)
    if worst > BOUND:
        raise AssertionError("%s: relative error %.3g above 2^-8" % (where, worst))


def check_value(a, b, where, tally):
    if isinstance(a, torch.Tensor):
        if not isinstance(b, torch.Tensor):
            raise AssertionError("%s: a tensor became %s" % (where, type(b).__name__))
        check_tensor(a, b, where, tally)
    elif isinstance(a, dict):
        if list(a.keys()) != list(b.keys()):
            raise AssertionError("%s: keys changed" % where)
        for k in a:
            check_value(a[k], b[k], "%s.%s" % (where, k), tally)
    elif isinstance(a, (list, tuple)):
        if len(a) != len(b):
            raise AssertionError("%s: length changed" % where)
        for i, (x, y) in enumerate(zip(a, b)):
            check_value(x, y, "%s.%d" % (where, i), tally)
    elif isinstance(a, float) and math.isnan(a):
        if not (isinstance(b, float) and math.isnan(b)):
            raise AssertionError("%s: NaN changed" % where)
    else:
        try:
            same = bool(a == b)
        except Exception:  # objects without a meaningful ==: compare what they hold
            same = type(a) is type(b) and getattr(a, "__dict__", None) == getattr(b, "__dict__", None)
        if not same:
            raise AssertionError("%s: %r became %r" % (where, a, b))


def check_file(saved, restored, rel, tally):
    tally.files += 1
    with open(saved, "rb") as f:
        raw_a = f.read()
    with open(restored, "rb") as f:
        raw_b = f.read()
    if raw_a == raw_b:
        return
    if rel.endswith(".safetensors"):
        check_value(resume_run.load_safetensors(saved), resume_run.load_safetensors(restored), rel, tally)
    elif zipfile.is_zipfile(saved):
        check_value(torch.load(saved, weights_only=False), torch.load(restored, weights_only=False),
                    rel, tally)
    else:
        raise AssertionError("%s: bytes changed in a file that holds no tensors" % rel)


def bound(saved, restored):
    tally = Tally()
    if os.path.isfile(saved):
        check_file(saved, restored, os.path.basename(saved), tally)
    else:
        names = lambda top: sorted(os.path.relpath(os.path.join(d, f), top)
                                   for d, _, fs in os.walk(top) for f in fs)
        if names(saved) != names(restored):
            raise AssertionError("files differ: %s vs %s" % (names(saved), names(restored)))
        for rel in names(saved):
            check_file(os.path.join(saved, rel), os.path.join(restored, rel), rel, tally)
    print("%d files, %d F32 tensors (%d rounded, worst relative error %.3g <= 2^-8), %d exact"
          % (tally.files, tally.f32, tally.rounded, tally.worst, tally.exact))


def weights(a, b):
    ta, tb = resume_run.load_safetensors(a), resume_run.load_safetensors(b)
    worst = max(float((ta[k].double() - tb[k].double()).abs().max()) for k in ta)
    print("largest weight difference %.3g" % worst)


if __name__ == "__main__":
    args = sys.argv[1:]
    if not args or len(args) % 3:
        sys.exit("usage: compare.py (bound SAVED RESTORED | weights A B)...")
    for i in range(0, len(args), 3):
        {"bound": bound, "weights": weights}[args[i]](args[i + 1], args[i + 2])
