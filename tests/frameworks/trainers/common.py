"""What the real-framework trainers share: arguments, determinism, the crash in the middle of a
framework's save, and the final weights.

Each trainer trains a tiny model for --steps optimizer steps with its framework and the
resume_run integration for it, resumes the framework's own way when RESUME_RUN_RESTORE_DIR is
set, and writes the final weights to --out (safetensors, compared byte for byte by the test).
It prints "step N" after each step (the test fires its drill after a few), "resumed at step
S" or "fresh start", and "saved at step S" for each save the signal asked for.
"""
import argparse
import io
import os
import sys
import time

import torch

import resume_run


def parse(extra=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--out", help="final weights (safetensors)")
    ap.add_argument("--step-time", type=float, default=0.0, help="seconds slept per step")
    ap.add_argument("--save-every", type=int, default=0, help="periodic saves (0: none)")
    ap.add_argument("--crash-at-save", type=int, default=0,
                    help="crash in the middle of the framework's Nth save")
    if extra:
        extra(ap)
    a = ap.parse_args()
    torch.manual_seed(1234)
    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    return a


# RR_TEST_DEVICE=cuda runs the trainers that support it on the GPU (tests/gpu/frameworks.sh);
# cuBLAS needs this workspace setting to be deterministic.
DEVICE = os.environ.get("RR_TEST_DEVICE", "cpu")
if DEVICE == "cuda":
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")


def log(msg):
    rank = os.environ.get("RANK")
    prefix = "rank %s: " % rank if rank is not None and os.environ.get("WORLD_SIZE", "1") != "1" else ""
    # One write(2) per line: the ranks share torchrun's stdout, and print() under
    # PYTHONUNBUFFERED writes the text and its newline apart, so two ranks' lines could
    # interleave ("rank 0: step 13rank 1: step 13") and a test's line match would miss.
    sys.stdout.flush()
    os.write(sys.stdout.fileno(), (prefix + msg + "\n").encode())


def pace(a, step):
    """After each step: say so, and give the drill time to come."""
    log("step %d" % step)
    if a.step_time:
        time.sleep(a.step_time)


def crash_in(owner, attr, nth, half_write=None):
    """Make the `nth` call of owner.attr crash the process (exit 3) in its middle: with
    `half_write` (a function of the call's args returning (path, bytes)), half of the bytes
    are written to the path first; else the call is left after it began. Calls before the
    nth go through."""
    real = getattr(owner, attr)
    calls = [0]

    def wrapper(*args, **kwargs):
        calls[0] += 1
        if calls[0] != nth:
            return real(*args, **kwargs)
        where = ""
        if half_write is not None:
            path, data = half_write(real, *args, **kwargs)
            with open(path, "wb") as f:
                f.write(data[: len(data) // 2])
            where = " after half of " + os.path.basename(str(path))
        log("crash in the middle of the save (%s.%s%s)" % (getattr(owner, "__name__", owner), attr, where))
        os._exit(3)

    setattr(owner, attr, wrapper)


def on_nth_call(owner, attr, nth, action):
    """Run `action()` just before the `nth` call of owner.attr."""
    real = getattr(owner, attr)
    calls = [0]

    def wrapper(*args, **kwargs):
        calls[0] += 1
        if calls[0] == nth:
            action()
        return real(*args, **kwargs)

    setattr(owner, attr, wrapper)


def torch_save_half(real, obj, f, *args, **kwargs):
    """For crash_in(torch, "save", ...): the bytes torch.save would write to the path f."""
    buf = io.BytesIO()
    real(obj, buf, *args, **kwargs)
    return f, buf.getvalue()


def write_weights(model, path):
    if path:
        sd = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
        resume_run.save_safetensors(sd, path)


def going():
    """The notice says the machine is going (what the integrations act on)."""
    n = resume_run.notice()
    return n is not None and n.get("kind") in resume_run.EXIT_KINDS


sys.stdout.reconfigure(line_buffering=True)
