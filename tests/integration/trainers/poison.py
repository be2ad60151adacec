"""A trainer whose checkpoint can be poisoned: it commits step-1, step-2, ... every --every
seconds (write .step-N.tmp, then rename), each a directory holding state.json with the step
and whether it is poisoned. --poison-at N writes step-N poisoned (as a half-written optimizer
state whose bytes hash fine would be). Resuming from a poisoned checkpoint crashes at once
with status 1, as a trainer that cannot load its checkpoint does. Stops with status 0 after
--until commits. Prints "commit step-N" and "training from step N"."""
import argparse
import json
import os
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--every", type=float, default=0.2)
p.add_argument("--until", type=int, default=10)
p.add_argument("--poison-at", type=int, default=0)
a = p.parse_args()

ckpt_dir = os.environ["RESUME_RUN_CHECKPOINT_DIR"]
start = 0
restore = os.environ.get("RESUME_RUN_RESTORE_DIR")
if restore:
    with open(os.path.join(restore, "state.json")) as f:
        state = json.load(f)
    if state["poisoned"]:
        print("cannot resume from %s: poisoned" % os.path.basename(restore), flush=True)
        sys.exit(1)
    start = state["step"]
print("training from step %d (attempt %s)" % (start, os.environ.get("RESUME_RUN_ATTEMPT")),
      flush=True)
for n in range(start + 1, a.until + 1):
    time.sleep(a.every)
    tmp = os.path.join(ckpt_dir, ".step-%d.tmp" % n)
    os.makedirs(tmp)
    with open(os.path.join(tmp, "state.json"), "w") as f:
        json.dump({"step": n, "poisoned": n == a.poison_at}, f)
    os.rename(tmp, os.path.join(ckpt_dir, "step-%d" % n))
    print("commit step-%d" % n, flush=True)
