"""A trainer whose checkpoints share most of their bytes: each holds frozen.bin (FROZEN bytes,
the same random bytes every time, like frozen layers) and fresh.bin (FRESH new random bytes,
like the weights that moved). It commits step-1 at once, then a step-N for every request
(routine ones from --every, and the notice's), and exits once a notice says the machine
is going.  usage: frozen_and_fresh.py FROZEN FRESH"""
import os
import random
import sys
import time

import resume_run as rr

frozen_size, fresh_size = int(sys.argv[1]), int(sys.argv[2])
frozen = random.Random(7).randbytes(frozen_size)
ck = rr.Checkpointer()
step = 1


def save():
    with ck.commit("step-%d" % step) as tmp:
        with open(os.path.join(tmp, "frozen.bin"), "wb") as f:
            f.write(frozen)
        with open(os.path.join(tmp, "fresh.bin"), "wb") as f:
            f.write(os.urandom(fresh_size))
    print("committed step-%d" % step, flush=True)


save()
end = time.time() + 240
while time.time() < end:
    time.sleep(0.05)
    step += 1
    if ck.requested():
        save()
        if ck.should_exit():
            print("exiting for the notice at step %d" % step, flush=True)
            sys.exit(0)
sys.exit(1)
