"""A trainer for the --every tests. Its checkpoint stalls it a known time (--save-time
seconds from the request to the commit, files included), and its state is --files files of
--file-bytes random bytes, of which --changes-per-s are rewritten per second of training
(round-robin), so a checkpoint's changed share grows with the training since the one before;
--changes-per-s -1 rewrites every file every step (every byte changes). It commits step-N
for every request, and exits when a notice says the machine is going or after --seconds.

usage: paced.py [--save-time S] [--step-time S] [--files N] [--file-bytes B]
                [--changes-per-s R] [--seconds S]"""
import argparse
import os
import sys
import time

import resume_run as rr

ap = argparse.ArgumentParser()
ap.add_argument("--save-time", type=float, default=0.2)
ap.add_argument("--step-time", type=float, default=0.005)
ap.add_argument("--files", type=int, default=1)
ap.add_argument("--file-bytes", type=int, default=1024)
ap.add_argument("--changes-per-s", type=float, default=0)
ap.add_argument("--seconds", type=float, default=120)
a = ap.parse_args()

ck = rr.Checkpointer()
state = [os.urandom(a.file_bytes) for _ in range(a.files)]
step, nxt, owed = 0, 0, 0.0
last = time.monotonic()
end = last + a.seconds
while time.monotonic() < end:
    time.sleep(a.step_time)
    step += 1
    now = time.monotonic()
    if a.changes_per_s < 0:
        state = [os.urandom(a.file_bytes) for _ in range(a.files)]
    else:
        owed += (now - last) * a.changes_per_s
        while owed >= 1:
            state[nxt % a.files] = os.urandom(a.file_bytes)
            nxt += 1
            owed -= 1
    last = now
    if ck.requested():
        t0 = time.monotonic()
        with ck.commit("step-%d" % step) as d:
            for k, b in enumerate(state):
                with open(os.path.join(d, "f%03d.bin" % k), "wb") as f:
                    f.write(b)
                    f.flush()
                    os.fsync(f.fileno())  # so the commit's own fsync finds nothing to do
            # the rest of the known stall; the commit's rename follows
            rest = a.save_time - (time.monotonic() - t0)
            if rest > 0:
                time.sleep(rest)
        print("committed step-%d in %.3f s" % (step, time.monotonic() - t0), flush=True)
        last = time.monotonic()  # nothing trained (or changed) during the stall
        if ck.should_exit():
            print("exiting for the notice at step %d" % step, flush=True)
            sys.exit(0)
sys.exit(0)
