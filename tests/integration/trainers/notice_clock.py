#!/usr/bin/python3
"""A trainer that clocks notices: it commits a small checkpoint every --every seconds, and for
each checkpoint request (the agent's signal) it notes when the signal arrived, commits one
at once, and leaves when the notice says the machine is going (or after --leave-after
requests). One JSON line per request is
appended to --out: {"signal_unix": float, "name": str, "notice": {...}}.
Used by the tests that measure notice-to-signal latency against a metadata server."""
import argparse
import json
import os
import signal
import time

import resume_run

ap = argparse.ArgumentParser()
ap.add_argument("--every", type=float, default=0.5)
ap.add_argument("--out", required=True)
ap.add_argument("--max-seconds", type=float, default=240)
ap.add_argument("--leave-after", type=int, default=0, help="exit 0 after this many requests")
args = ap.parse_args()

signals = []  # arrival times, appended by the handler (nothing else happens in it)
signal.signal(resume_run.parse_signal(os.environ.get("RESUME_RUN_SIGNAL") or "USR1"),
              lambda *_: signals.append(time.time()))
ck = resume_run.Checkpointer(install=False)
step, handled, next_commit, end = 0, 0, 0.0, time.time() + args.max_seconds


def commit():
    global step
    step += 1
    with ck.commit("step-%d" % step) as d:
        with open(os.path.join(d, "state.bin"), "wb") as f:
            f.write(os.urandom(4096))
    return "step-%d" % step


while time.time() < end:
    if handled < len(signals):
        at = signals[handled]
        handled = len(signals)
        name = commit()
        n = resume_run.notice() or {}
        with open(args.out, "a") as f:
            f.write(json.dumps({"signal_unix": at, "name": name, "notice": n}) + "\n")
        print("checkpoint %s on request (notice %s)" % (name, n.get("kind")), flush=True)
        if n.get("kind") in resume_run.EXIT_KINDS:
            print("checkpointed at step %d, exiting for preemption" % step, flush=True)
            raise SystemExit(0)
        if handled == args.leave_after:
            print("leaving after %d requests" % handled, flush=True)
            raise SystemExit(0)
    elif time.time() >= next_commit:
        commit()
        next_commit = time.time() + args.every
    time.sleep(0.01)
print("time is up at step %d" % step, flush=True)
