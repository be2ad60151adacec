"""A trainer that commits step-1, step-2, ... every --every seconds (write .step-N.tmp, then
rename), each checkpoint one file of --bytes random bytes (incompressible, so persisting it
takes real time over a slow link), and stops after --until commits with status 0.

On the checkpoint signal (SIGUSR1) it commits at once; with --obey it then exits 0 when the
notice file says the machine is going (preempt, terminate), as the Python helper's users do.
Prints "commit step-N" for each commit and "exit for the notice after step-N" when it obeys."""
import argparse
import json
import os
import signal
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--every", type=float, default=1.0)
p.add_argument("--until", type=int, default=10)
p.add_argument("--bytes", type=int, default=4096)
p.add_argument("--obey", action="store_true")
a = p.parse_args()

ckpt_dir = os.environ["RESUME_RUN_CHECKPOINT_DIR"]
asked = []
signal.signal(signal.SIGUSR1, lambda s, f: asked.append(s))


def going():
    try:
        with open(os.environ["RESUME_RUN_NOTICE_FILE"]) as f:
            return json.load(f)["kind"] in ("preempt", "terminate")
    except (OSError, ValueError, KeyError):
        return False


def commit(n):
    tmp = os.path.join(ckpt_dir, ".step-%d.tmp" % n)
    os.makedirs(tmp)
    with open(os.path.join(tmp, "state.bin"), "wb") as f:
        f.write(os.urandom(a.bytes))
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, os.path.join(ckpt_dir, "step-%d" % n))
    print("commit step-%d" % n, flush=True)


start = 0
restore = os.environ.get("RESUME_RUN_RESTORE_DIR")
if restore:
    start = int(os.path.basename(restore).split("-")[1])
print("training from step %d" % start, flush=True)
n = start
next_at = time.monotonic() + a.every
while n < a.until:
    time.sleep(0.01)
    if asked or time.monotonic() >= next_at:
        was_asked = bool(asked)
        asked.clear()
        n += 1
        commit(n)
        next_at = time.monotonic() + a.every
        if was_asked and a.obey and going():
            print("exit for the notice after step-%d" % n, flush=True)
            sys.exit(0)
sys.exit(0)
