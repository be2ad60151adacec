"""A trainer that saves and resumes the way a real framework does, with no line changed for
resume-run: each --shape reproduces one framework's on-disk write order and file names with
real torch.save, and its own resume logic. HF transformers, Lightning and DeepSpeed are not
installable here (no internet beyond Debian and npm), so their documented behaviour is
reproduced; each save_/find_ function names the framework source it follows.

usage: frameworks.py --shape hf|lightning|deepspeed|dcp|plain --steps N --save-every K
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
import re
import shutil
import signal
import struct
import sys
import tempfile
import time

import torch

OUT = os.environ.get("RESUME_RUN_CHECKPOINT_DIR", "ckpt")
ASKED = False


def on_signal(signum, frame):
    global ASKED
    ASKED = True


class Crash(Exception):
    pass


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


def safetensors_bytes(tensors):
    """The safetensors layout (8-byte header length, JSON header, raw data), as
    safetensors.torch.save_file writes it."""
    header, blobs, off = {}, [], 0
    for name, t in tensors.items():
        raw = t.contiguous().numpy().tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


def safetensors_load(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    out = {}
    for name, meta in header.items():
        a, b = meta["data_offsets"]
        out[name] = torch.frombuffer(bytearray(data[8 + n + a : 8 + n + b]), dtype=torch.float32).reshape(meta["shape"])
    return out


# ---- HF Trainer: transformers/trainer.py Trainer._save_checkpoint writes output_dir/
# checkpoint-{global_step}/ in place: save_model (model.safetensors), then
# _save_optimizer_and_scheduler (optimizer.pt, scheduler.pt), _save_rng_state
# (rng_state.pth), and last state.save_to_json (trainer_state.json).
# Resume: trainer_utils.get_last_checkpoint, regex ^checkpoint\-(\d+)$ over directories.

def save_hf(state, crash):
    d = os.path.join(OUT, "checkpoint-%d" % state["step"])
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(safetensors_bytes({"w": state["w"]}))
    opt = torch_bytes({"state": {0: {"momentum_buffer": state["w"] * 0.5}}, "param_groups": [{"lr": 0.1}]})
    if crash:
        write_half(os.path.join(d, "optimizer.pt"), opt)
        crash_now("checkpoint-%d/optimizer.pt" % state["step"])
    with open(os.path.join(d, "optimizer.pt"), "wb") as f:
        f.write(opt)
    torch.save({"last_epoch": state["step"]}, os.path.join(d, "scheduler.pt"))
    torch.save({"cpu": torch.get_rng_state()}, os.path.join(d, "rng_state.pth"))
    with open(os.path.join(d, "trainer_state.json"), "w") as f:
        json.dump({"global_step": state["step"], "log_history": []}, f, indent=2)


def find_hf():
    rx = re.compile(r"^checkpoint\-(\d+)$")
    if not os.path.isdir(OUT):
        return None
    found = [p for p in os.listdir(OUT) if rx.search(p) and os.path.isdir(os.path.join(OUT, p))]
    if not found:
        return None
    return os.path.join(OUT, max(found, key=lambda x: int(rx.search(x).groups()[0])))


def load_hf(path):
    with open(os.path.join(path, "trainer_state.json")) as f:
        step = json.load(f)["global_step"]
    torch.load(os.path.join(path, "optimizer.pt"))
    return {"step": step, "w": safetensors_load(os.path.join(path, "model.safetensors"))["w"]}


# ---- Lightning: pytorch_lightning ModelCheckpoint._save_checkpoint -> trainer.save_checkpoint
# -> lightning.fabric.utilities.cloud_io._atomic_save: torch.save into a BytesIO, then an
# fsspec transaction (fsspec/implementations/local.py LocalFileOpener: tempfile.mkstemp(),
# a "tmpXXXXXXXX" name in TMPDIR, committed by shutil.move onto epoch=E-step=S.ckpt).
# With save_top_k=1 the previous best file is removed afterwards (_remove_checkpoint).
# Resume: trainer.fit(ckpt_path=...) torch.loads that file.

def save_lightning(state, crash, prev):
    name = "epoch=%d-step=%d.ckpt" % (state["step"] // 10, state["step"])
    data = torch_bytes({"epoch": state["step"] // 10, "global_step": state["step"],
                        "state_dict": {"w": state["w"]}, "pytorch-lightning_version": "2.2.0"})
    fd, tmp = tempfile.mkstemp()
    os.close(fd)
    if crash:
        write_half(tmp, data)
        crash_now(os.path.basename(tmp) + " (the fsspec temp file of " + name + ")")
    with open(tmp, "wb") as f:
        f.write(data)
    shutil.move(tmp, os.path.join(OUT, name))
    if prev and prev != name:
        os.remove(os.path.join(OUT, prev))
    return name


def load_lightning(path):
    ck = torch.load(path)
    return {"step": ck["global_step"], "w": ck["state_dict"]["w"]}


# ---- DeepSpeed: deepspeed/runtime/engine.py DeepSpeedEngine.save_checkpoint: tag
# "global_step{N}", _save_checkpoint -> {tag}/mp_rank_00_model_states.pt, _save_zero_checkpoint
# -> {tag}/zero_pp_rank_0_mp_rank_00_optim_states.pt and _copy_recovery_script
# (zero_to_fp32.py in save_dir), then with save_latest: open(save_dir/'latest','w').write(tag).
# Resume: load_checkpoint(load_dir, tag=None) reads 'latest' for the tag.

def save_deepspeed(state, crash):
    tag = "global_step%d" % state["step"]
    d = os.path.join(OUT, tag)
    os.makedirs(d, exist_ok=True)
    torch.save({"module": {"w": state["w"]}, "global_steps": state["step"]},
               os.path.join(d, "mp_rank_00_model_states.pt"))
    optim = torch_bytes({"optimizer_state_dict": {"step": state["step"]}})
    if crash:
        write_half(os.path.join(d, "zero_pp_rank_0_mp_rank_00_optim_states.pt"), optim)
        crash_now(tag + "/zero_pp_rank_0_mp_rank_00_optim_states.pt")
    with open(os.path.join(d, "zero_pp_rank_0_mp_rank_00_optim_states.pt"), "wb") as f:
        f.write(optim)
    with open(os.path.join(OUT, "zero_to_fp32.py"), "w") as f:
        f.write("# DeepSpeed's recovery script, copied next to the checkpoints\n")
    with open(os.path.join(OUT, "latest"), "w") as fd:
        fd.write(tag)


def find_deepspeed():
    p = os.path.join(OUT, "latest")
    if not os.path.isfile(p):
        return None
    with open(p) as fd:
        tag = fd.read().strip()
    return os.path.join(OUT, tag)


def load_deepspeed(path):
    ck = torch.load(os.path.join(path, "mp_rank_00_model_states.pt"))
    torch.load(os.path.join(path, "zero_pp_rank_0_mp_rank_00_optim_states.pt"))
    return {"step": ck["global_steps"], "w": ck["module"]["w"]}


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


# ---- plain PyTorch: torch.save to a temporary name, then os.replace onto the final name.

def save_plain(state, crash):
    final = os.path.join(OUT, "model-step-%d.pt" % state["step"])
    tmp = final + ".tmp"
    data = torch_bytes({"step": state["step"], "w": state["w"]})
    if crash:
        write_half(tmp, data)
        crash_now(os.path.basename(tmp))
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, final)


def load_plain(path):
    return torch.load(path)


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
    ap.add_argument("--shape", required=True, choices=["hf", "lightning", "deepspeed", "dcp", "plain"])
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
    if a.shape == "hf":
        p = find_hf()  # resume_from_checkpoint=True
        state = load_hf(p) if p else None
    elif a.shape == "deepspeed":
        p = find_deepspeed()
        state = load_deepspeed(p) if p and os.path.isdir(p) else None
    elif restore and a.shape == "lightning":
        p = restore  # trainer.fit(ckpt_path=os.environ.get("RESUME_RUN_RESTORE_DIR"))
        state = load_lightning(p)
    elif restore and a.shape == "dcp":
        p = restore
        state = load_dcp(p, a.rank)
    elif restore and a.shape == "plain":
        p = restore
        state = load_plain(p)
    if state:
        expect = torch.full((4,), float(state["step"]))
        if not torch.equal(state["w"], expect):
            print("%sWRONG weights after resume: %s" % (tag, state["w"].tolist()), flush=True)
            return 4
        print("%sresumed from step %d (%s)" % (tag, state["step"], os.path.basename(p)), flush=True)
    else:
        state = {"step": 0, "w": torch.zeros(4)}
        print("%sfresh start" % tag, flush=True)

    saves, prev = 0, None
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
        if a.shape == "hf":
            save_hf(state, crash)
        elif a.shape == "lightning":
            prev = save_lightning(state, crash, prev)
        elif a.shape == "deepspeed":
            save_deepspeed(state, crash)
        elif a.shape == "dcp":
            save_dcp(state, crash, a.rank, a.world, saves)
        else:
            save_plain(state, crash)
        if asked:
            print("%scheckpoint signal: saved at step %d" % (tag, state["step"]), flush=True)
            if notice_says_going() and not os.environ.get("FW_STAY"):
                print("%sleaving for the notice" % tag, flush=True)
                return 0
    print("%sdone at step %d w=%s" % (tag, state["step"], state["w"][0].item()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
