#!/usr/bin/python3
"""Sends SIGTERM (a notice with the agent's --grace as its deadline) at the worst moment for
--every: just before the next periodic checkpoint, when the most has changed since the last
durable one.

usage: notice_before_ask.py LOG PID (auto | SECONDS) [ASKS]

LOG is the agent's --log-format json log. With "auto", waits until the agent's interval is
set by the notice-lead rule and ASKS (default 2) checkpoints were persisted since, the last
one the newest committed; with SECONDS, a fixed --every, the same from the start. Then
signals PID 0.3 s before the next ask (auto: the interval in force after the last commit;
fixed: after the last ask) and prints the interval it used.
"""
import json
import os
import re
import signal
import sys
import time

log, pid, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
want = int(sys.argv[4]) if len(sys.argv) > 4 else 2


def lines():
    out = []
    with open(log) as f:
        for line in f:
            if line.startswith("{"):
                try:
                    out.append(json.loads(line))
                except ValueError:
                    pass  # a line still being written
    return out


end = time.time() + 120
while True:
    if time.time() > end:
        sys.exit("notice_before_ask: the agent never got there")
    entries = lines()
    start, tau = None, None
    if mode == "auto":
        # From the first interval the rule set; the agent says each new one as the measured
        # changes move it (after most persists on a loaded machine), and the last said is
        # the one in force.
        for i, e in enumerate(entries):
            m = re.match(r"every auto: a checkpoint every ([0-9.]+) s: the notice-lead rule",
                         e["msg"])
            if m:
                start = i if start is None else start
                tau = float(m.group(1))
    else:
        start, tau = 0, float(mode)
    if start is not None:
        asks = [e for e in entries[start:] if e["msg"].startswith("asked the trainer")]
        commits = [e for e in entries[start:]
                   if re.match(r"checkpoint step-[0-9]+ committed$", e["msg"])]
        persisted = [e for e in entries[start:] if e["msg"].startswith("persisted step-")]
        # settled: ASKS periodic checkpoints persisted under this interval, the last
        # commit answered and persisted
        if (len(persisted) >= want and commits and commits[-1]["ts"] >= asks[-1]["ts"] and
                persisted[-1]["msg"].startswith("persisted %s:" % commits[-1]["msg"].split()[1])):
            break
    time.sleep(0.02)
# auto counts the interval from the commit; a fixed --every from the ask
when = (commits[-1]["ts"] if mode == "auto" else asks[-1]["ts"]) + tau - 0.3
time.sleep(max(0.0, when - time.time()))
os.kill(pid, signal.SIGTERM)
print("%.2f" % tau, flush=True)
