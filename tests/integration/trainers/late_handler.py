"""A trainer that takes a while before installing its handler, then checkpoints on request."""
import os
import sys
import time

import resume_run

time.sleep(float(sys.argv[1]))
ck = resume_run.Checkpointer()
print(f"handler installed for SIG{os.environ['RESUME_RUN_SIGNAL']}", flush=True)
end = time.time() + 60
while time.time() < end:
    if ck.requested():
        with ck.commit("step-1") as d:
            with open(os.path.join(d, "state.txt"), "w") as f:
                f.write("late but there\n")
        print("checkpointed on request", flush=True)
        sys.exit(0)
    time.sleep(0.01)
sys.exit(1)
