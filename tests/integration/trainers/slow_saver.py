"""A trainer that saves when asked (SIGUSR1): after --save-s seconds it commits step-N, one
file of --bytes random bytes (write .step-N.tmp, then rename), and trains on; it exits 0
after --run-s seconds, first committing a final step-100000 with --final. It never stops for
a notice on its own: what the agent does past the notice's deadline is what is tested."""
import argparse
import os
import signal
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--save-s", type=float, default=0.0)
p.add_argument("--run-s", type=float, default=10.0)
p.add_argument("--bytes", type=int, default=4096)
p.add_argument("--final", action="store_true")
a = p.parse_args()
ckpt_dir = os.environ["RESUME_RUN_CHECKPOINT_DIR"]
asked = []
signal.signal(signal.SIGUSR1, lambda s, f: asked.append(s))


def commit(n):
    tmp = os.path.join(ckpt_dir, ".step-%d.tmp" % n)
    os.makedirs(tmp)
    with open(os.path.join(tmp, "state.bin"), "wb") as f:
        f.write(os.urandom(a.bytes))
    os.rename(tmp, os.path.join(ckpt_dir, "step-%d" % n))
    print("commit step-%d" % n, flush=True)


start = time.time()
step = 0
while time.time() - start < a.run_s:
    time.sleep(0.05)
    step += 1
    if asked:
        asked.clear()
        time.sleep(a.save_s)
        commit(step)
if a.final:
    commit(100000)
print("trainer done", flush=True)
sys.exit(0)
