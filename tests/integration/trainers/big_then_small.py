"""A trainer whose routine checkpoint is big and whose notice checkpoint is small: step-1
holds 8 MiB of random bytes (they do not compress), then it waits for the agent's request
and answers it with step-2 (a few kB), and exits as the notice asks."""
import os
import sys
import time

import resume_run as rr

ck = rr.Checkpointer()
with ck.commit("step-1") as tmp:
    with open(os.path.join(tmp, "big.bin"), "wb") as f:
        f.write(os.urandom(8 << 20))
print("committed step-1 (8 MiB)", flush=True)
end = time.time() + 300
while time.time() < end:
    if ck.requested():
        with ck.commit("step-2") as tmp:
            with open(os.path.join(tmp, "state.bin"), "wb") as f:
                f.write(os.urandom(4096))
        print("checkpointed at step 2, exiting for preemption", flush=True)
        sys.exit(0)
    time.sleep(0.05)
sys.exit(1)
