"""A trainer whose commits the test paces: it commits checkpoint NAME (write
.NAME.tmp, rename to NAME) when the file GATE/commit-NAME appears, in the order given on
the command line, and exits 0 when GATE/stop appears or after the last one.

Every checkpoint holds frozen.bin (the same bytes for every checkpoint of every machine: a
frozen layer, deduplicated in the store) and weights.bin (bytes that depend on --tag and
the name: two machines with different tags write different step-N). --big MiB makes
weights.bin of the checkpoints named in --big-names that large (incompressible), so
persisting them takes a while.

On the checkpoint signal (SIGUSR1) it commits a checkpoint named by --on-signal at once
and then, while the notice file exists, exits 0 (the machine is going)."""
import argparse
import os
import random
import signal
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--gate", required=True)
p.add_argument("--tag", default="a")
p.add_argument("--big", type=int, default=0)
p.add_argument("--big-names", default="")
p.add_argument("--on-signal", default="")
p.add_argument("names", nargs="*")
a = p.parse_args()

ckpt_dir = os.environ["RESUME_RUN_CHECKPOINT_DIR"]
asked = False


def on_usr1(signum, frame):
    global asked
    asked = True


signal.signal(signal.SIGUSR1, on_usr1)


def stream(seed, n):
    return random.Random(seed).randbytes(n)  # deterministic for a str seed


def commit(name):
    tmp = os.path.join(ckpt_dir, f".{name}.tmp")
    os.makedirs(tmp, exist_ok=True)
    with open(os.path.join(tmp, "frozen.bin"), "wb") as f:
        f.write(stream("frozen", 1 << 20))
    size = (a.big << 20) if name in a.big_names.split(",") else 256 << 10
    with open(os.path.join(tmp, "weights.bin"), "wb") as f:
        f.write(stream(f"{a.tag}:{name}", size))
    os.rename(tmp, os.path.join(ckpt_dir, name))
    print(f"trainer {a.tag}: committed {name}", flush=True)


def wait_gate(name):
    path = os.path.join(a.gate, f"commit-{name}")
    stop = os.path.join(a.gate, "stop")
    while not os.path.exists(path):
        if os.path.exists(stop):
            return False
        if asked:
            return False
        time.sleep(0.02)
    return True


for name in a.names:
    if not wait_gate(name):
        break
    commit(name)

while not os.path.exists(os.path.join(a.gate, "stop")):
    if asked and a.on_signal:
        commit(a.on_signal)
        asked = False
        if os.path.exists(os.environ.get("RESUME_RUN_NOTICE_FILE", "/nonexistent")):
            print(f"trainer {a.tag}: checkpointed {a.on_signal}, exiting for preemption",
                  flush=True)
            sys.exit(0)
    time.sleep(0.02)
print(f"trainer {a.tag}: done", flush=True)
