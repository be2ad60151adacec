"""A worker that saves the way torch.distributed.checkpoint does (each rank's shard, then
.metadata, with real torch.save), for a launcher that real torchrun is not: one that keeps
SIGTERM to itself (test_frameworks_torchrun.sh). The frameworks themselves, DCP under real
torchrun included, are tested with the real libraries in tests/frameworks.

usage: frameworks.py --shape dcp --steps N --save-every K
                     [--crash-at-save M] [--rank R --world W] [--step-time S]

The model is one tensor w; every step adds 1 to it, so the resumed step can be checked from
the values. Prints "resumed from step S" (or "fresh start") and "done at step N w=V".
SIGUSR1 (RESUME_RUN_SIGNAL) sets a flag; the loop then saves, and leaves if the notice file
says the machine is going, as the trainer contract asks.
"""
import argparse
import io
import json
import os
import pickle
import signal
import sys
import time

import torch

OUT = os.environ.get("RESUME_RUN_CHECKPOINT_DIR", "ckpt")
ASKED = False


def on_signal(signum, frame):
    global ASKED
    ASKED = True


def crash_now(what):
    print("crash mid-write of %s" % what, flush=True)
    os._exit(3)


def write_half(path, data):
    with open(path, "wb") as f:
        f.write(data[: len(data) // 2])


def torch_bytes(obj):
    b = io.BytesIO()
    torch.save(obj, b)
    return b.getvalue()


# ---- torch.distributed.checkpoint: filesystem.py FileSystemWriter.write_data writes each
# rank's __{rank}_{i}.distcp (tensors through torch.save), then the coordinator's finish()
# pickles the Metadata to .metadata.tmp and renames it to .metadata. Ranks here are the
# workers of a torchrun-like launcher; rank 0 waits for every shard (the gather of
# write results) before writing .metadata.

def dcp_agree_step(step, rank, world, saves):
    """Real ranks step in lockstep (every step is a collective); these workers do not, so
    rank 0 names the step of save number `saves` and the others use it."""
    if world == 1:
        return step
    p = os.path.join(OUT, ".dcp_save_%d" % saves)
    if rank == 0:
        with open(p + ".w", "w") as f:
            f.write(str(step))
        os.rename(p + ".w", p)
        return step
    deadline = time.time() + 30
    while not os.path.exists(p):
        if time.time() > deadline:
            raise RuntimeError("rank 0 never saved")
        time.sleep(0.01)
    with open(p) as f:
        return int(f.read())


def save_dcp(state, crash, rank, world, saves):
    d = os.path.join(OUT, "step-%d" % dcp_agree_step(state["step"], rank, world, saves))
    os.makedirs(d, exist_ok=True)
    shard = torch_bytes({"w": state["w"], "step": state["step"]})
    if crash:
        write_half(os.path.join(d, "__%d_0.distcp" % rank), shard)
        crash_now("step-%d/__%d_0.distcp" % (state["step"], rank))
    with open(os.path.join(d, "__%d_0.distcp" % rank), "wb") as f:
        f.write(shard)
    with open(os.path.join(d, ".done_%d" % rank), "w"):
        pass
    if rank != 0:
        return
    deadline = time.time() + 30
    while not all(os.path.exists(os.path.join(d, ".done_%d" % r)) for r in range(world)):
        if time.time() > deadline:
            raise RuntimeError("shards never came")
        time.sleep(0.01)
    meta = {"state_dict_metadata": {"w": list(state["w"].shape)}, "storage_data": {
        "w": ["__%d_0.distcp" % r for r in range(world)]}}
    with open(os.path.join(d, ".metadata.tmp"), "wb") as f:
        pickle.dump(meta, f)
        f.flush()
        os.fsync(f.fileno())
    os.rename(os.path.join(d, ".metadata.tmp"), os.path.join(d, ".metadata"))


def load_dcp(path, rank):
    with open(os.path.join(path, ".metadata"), "rb") as f:
        meta = pickle.load(f)
    ck = torch.load(os.path.join(path, meta["storage_data"]["w"][rank]))
    return {"step": ck["step"], "w": ck["w"]}


def notice_says_going():
    p = os.environ.get("RESUME_RUN_NOTICE_FILE")
    if not p or not os.path.exists(p):
        return False
    try:
        with open(p) as f:
            return json.load(f).get("kind") in ("preempt", "terminate")
    except (OSError, ValueError):
        return True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shape", required=True, choices=["dcp"])
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--save-every", type=int, default=0)
    ap.add_argument("--crash-at-save", type=int, default=0)
    ap.add_argument("--step-time", type=float, default=0.0)
    ap.add_argument("--rank", type=int, default=int(os.environ.get("RANK", "0")))
    ap.add_argument("--world", type=int, default=int(os.environ.get("WORLD_SIZE", "1")))
    a = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    sig = getattr(signal, "SIG" + os.environ.get("RESUME_RUN_SIGNAL", "USR1"))
    signal.signal(sig, on_signal)
    tag = "rank %d: " % a.rank if a.world > 1 else ""

    # Resume the way the framework does.
    restore = os.environ.get("RESUME_RUN_RESTORE_DIR")
    state = None
    if restore:
        p = restore
        state = load_dcp(p, a.rank)
    if state:
        expect = torch.full((4,), float(state["step"]))
        if not torch.equal(state["w"], expect):
            print("%sWRONG weights after resume: %s" % (tag, state["w"].tolist()), flush=True)
            return 4
        print("%sresumed from step %d (%s)" % (tag, state["step"], os.path.basename(p)), flush=True)
    else:
        state = {"step": 0, "w": torch.zeros(4)}
        print("%sfresh start" % tag, flush=True)

    saves = 0
    while state["step"] < a.steps:
        state["step"] += 1
        state["w"] = state["w"] + 1
        if a.step_time:
            time.sleep(a.step_time)
        periodic = a.save_every and state["step"] % a.save_every == 0
        if not (periodic or ASKED):
            continue
        asked = ASKED
        globals()["ASKED"] = False
        saves += 1
        crash = saves == a.crash_at_save
        save_dcp(state, crash, a.rank, a.world, saves)
        if asked:
            print("%scheckpoint signal: saved at step %d" % (tag, state["step"]), flush=True)
            if notice_says_going() and not os.environ.get("FW_STAY"):
                print("%sleaving for the notice" % tag, flush=True)
                return 0
    print("%sdone at step %d w=%s" % (tag, state["step"], state["w"][0].item()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
