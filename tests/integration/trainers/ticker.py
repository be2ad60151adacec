"""A trainer that commits step-1, step-2, ... every --every seconds (write .step-N.tmp, then
rename), each checkpoint one file of --bytes random bytes (incompressible, so persisting it
takes real time over a slow link), and stops after --until commits with status 0.

--distinct N: the bytes cycle through N fixed strings (step N+1 holds what step 1 held), so
the store's chunks stop growing after N commits. --keep-local N: after each commit the one N
before it is removed, as HF's save_total_limit and Lightning's save_top_k rotate theirs.

On the checkpoint signal (SIGUSR1) it commits at once; with --obey it then exits 0 when the
notice file says the machine is going (preempt, terminate), as the Python helper's users do.
Prints "commit step-N" for each commit and "exit for the notice after step-N" when it obeys."""
import argparse
import json
import os
import random
import shutil
import signal
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--every", type=float, default=1.0)
p.add_argument("--until", type=int, default=10)
p.add_argument("--bytes", type=int, default=4096)
p.add_argument("--obey", action="store_true")
p.add_argument("--distinct", type=int, default=0)
p.add_argument("--keep-local", type=int, default=0)
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
        if a.distinct:
            f.write(random.Random(n % a.distinct).randbytes(a.bytes))
        else:
            f.write(os.urandom(a.bytes))
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, os.path.join(ckpt_dir, "step-%d" % n))
    print("commit step-%d" % n, flush=True)
    if a.keep_local:
        shutil.rmtree(os.path.join(ckpt_dir, "step-%d" % (n - a.keep_local)),
                      ignore_errors=True)


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
