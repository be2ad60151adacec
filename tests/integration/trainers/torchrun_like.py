"""A launcher that starts its workers the way torchrun >= 2.2 does
(torch/distributed/elastic/multiprocessing/subprocess_handler/subprocess_handler.py:
subprocess.Popen(..., start_new_session=True)), so the workers are in sessions and process
groups of their own. Like torchrun it installs a SIGTERM handler that passes SIGTERM on to
the workers, and no handler for the checkpoint signal.

usage: torchrun_like.py NPROC [--keep-term] -- WORKER ARGS...   (RANK, WORLD_SIZE per worker)
--keep-term: the SIGTERM handler does not pass SIGTERM on (so a test can see who else
delivers it to the workers).
"""
import os
import signal
import subprocess
import sys

nproc = int(sys.argv[1])
keep_term = sys.argv[2] == "--keep-term"
cmd = sys.argv[sys.argv.index("--") + 1:]
workers = []


def on_term(signum, frame):
    if keep_term:
        print("launcher: SIGTERM, not passed on", flush=True)
        return
    print("launcher: SIGTERM, passing it to the workers", flush=True)
    for w in workers:
        if w.poll() is None:
            w.send_signal(signal.SIGTERM)


signal.signal(signal.SIGTERM, on_term)
for rank in range(nproc):
    env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(nproc), LOCAL_RANK=str(rank))
    workers.append(subprocess.Popen(cmd, env=env, start_new_session=True))
print("launcher: started %d workers in new sessions: %s" % (
    nproc, " ".join("%d(sid %d)" % (w.pid, os.getsid(w.pid)) for w in workers)), flush=True)
codes = [w.wait() for w in workers]
print("launcher: workers exited %s" % " ".join(str(c) for c in codes), flush=True)
sys.exit(0 if all(c == 0 for c in codes) else 1)
