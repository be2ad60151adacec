#!/usr/bin/python3
"""The chaos soak's driver (tests/integration/test_chaos_soak.sh sets up the S3 test server,
the fault proxy and the environment). Each cycle is one machine: a fresh checkpoint
directory, the agent restoring from the store and running the PyTorch trainer
(trainers/chaos_trainer.py), then one event at a random moment: a notice (preempt,
rebalance, terminate, through --drill-file), or SIGKILL of the agent (while it restores,
persists, or the trainer saves) or of the trainer; then the machine is lost (everything left
is SIGKILLed, the directory forgotten). Checked after each cycle: what the next machine
restores is never older than the newest checkpoint any agent logged durable. At the end one
machine trains to the end undisturbed: its final weights must equal an uninterrupted run's
bit for bit (--precision exact), `verify` must be clean, after `gc` every chunk in the store
is one a kept checkpoint names and every mark belongs to a kept checkpoint, and the
ledger's exit events say how each machine ended (preempted, finished; a lost one: none).

Prints one line per cycle and a summary: "soak: N cycles ..."."""
import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import time

DURABLE = re.compile(r"^resume-run: (?:persisted (step-\d+):|(step-\d+) is already in the store|"
                     r"checkpoint (step-\d+) is durable)", re.M)
RESTORED = re.compile(r"^resume-run: (?:restored (step-\d+):|checkpoint (step-\d+) is already here)",
                      re.M)
STARTED = re.compile(r"^resume-run: started .* \(pid (\d+), attempt (\d+)\)", re.M)
COMMITS = re.compile(r"^commit step-(\d+)$", re.M)
EVENTS = ("preempt", "rebalance", "terminate", "kill-agent-restoring", "kill-agent-persisting",
          "kill-agent-saving", "kill-trainer")
PY = "/usr/bin/python3"


def fail(msg):
    print("soak: FAIL: " + msg, file=sys.stderr, flush=True)
    sys.exit(1)


def steps(text, regex):
    return [int(next(g for g in m.groups() if g).split("-")[1]) for m in regex.finditer(text)]


class Machine:
    def __init__(self, a, n, extra):
        self.dir = os.path.join(a.work, "m%d" % n)
        self.notice = self.dir + ".notice"
        self.logpath = self.dir + ".log"
        cmd = [a.bin, "--store", a.store, "--checkpoint-dir", self.dir, "--drill-file",
               self.notice, "--precision", "exact", "--keep", "3", "--threads", "2",
               "--", PY, a.trainer, "--every", str(a.every)] + extra
        self.log = open(self.logpath, "w")
        self.agent = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                      stdin=subprocess.DEVNULL, start_new_session=True)
        self.t0 = time.monotonic()

    def text(self):
        with open(self.logpath) as f:
            return f.read()

    def wait_for(self, what, timeout=60):
        """Polls until what(log text) is true; False when the agent left or time ran out."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            t = self.text()
            if what(t):
                return True
            if self.agent.poll() is not None:
                return what(self.text())
            time.sleep(0.005)
        return False

    def trainers(self):
        return [int(m.group(1)) for m in STARTED.finditer(self.text())]

    def lose(self):
        """The machine is gone: SIGKILL for the agent and every trainer it started."""
        for pid in self.trainers():
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        try:
            self.agent.kill()
        except ProcessLookupError:
            pass
        self.agent.wait()
        self.log.close()

    def notice_file(self, kind):
        tmp = self.notice + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"kind": kind, "deadline_in": 30}, f)
        os.rename(tmp, self.notice)


def commits(m):
    return len(COMMITS.findall(m.text()))


def cycle(a, n, rng):
    event = rng.choice(EVENTS)
    m = Machine(a, n, ["--steps", "1000000000"])
    if event == "kill-agent-restoring":
        time.sleep(rng.uniform(0, 0.4))
        m.lose()
        return m, event
    k = rng.randint(1, 3)
    if not m.wait_for(lambda t: len(COMMITS.findall(t)) >= k, 120):
        fail("cycle %d: the trainer committed nothing (log %s)" % (n, m.logpath))
    if event in ("preempt", "terminate"):
        m.notice_file(event)
        try:
            rc = m.agent.wait(60)
        except subprocess.TimeoutExpired:
            fail("cycle %d: the agent did not leave after a %s notice" % (n, event))
        if rc != 75:
            fail("cycle %d: %s notice: agent status %d, not 75 (log %s)" % (n, event, rc, m.logpath))
    elif event == "rebalance":
        m.notice_file(event)
        if not m.wait_for(lambda t: "rebalance notice handled" in t):
            fail("cycle %d: the rebalance notice was not handled (log %s)" % (n, m.logpath))
        time.sleep(rng.uniform(0, 0.5))
    elif event == "kill-agent-persisting":
        # The moment the agent starts persisting (nothing logged after it yet), and a little.
        m.wait_for(lambda t: re.search(r"^resume-run: persisting step-\d+[^\n]*\n\Z", t, re.M)
                   is not None, 30)
        time.sleep(rng.uniform(0, 0.05))
    elif event == "kill-agent-saving":
        # The moment the trainer starts writing (nothing logged after it yet).
        m.wait_for(lambda t: re.search(r"^saving step-\d+\n\Z", t, re.M) is not None, 30)
    elif event == "kill-trainer":
        time.sleep(rng.uniform(0, 0.3))
        os.killpg(m.trainers()[0], signal.SIGKILL)
        if not m.wait_for(lambda t: re.search(r"attempt 1\)", t) is not None, 30):
            fail("cycle %d: the trainer was not restarted (log %s)" % (n, m.logpath))
        # The restarted trainer (restoring, or training on) is lost with the machine.
        time.sleep(rng.uniform(0, 1.5))
    m.lose()
    return m, event


def audit(a, counts):
    """After gc: every chunk is named by a kept manifest, every mark has its manifest."""
    import boto3
    bucket, _, prefix = a.store[len("s3://"):].partition("/")
    s3 = boto3.client("s3", endpoint_url=a.direct)
    keys = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/"):
        keys += [o["Key"] for o in page.get("Contents", [])]
    run = prefix + "/default/"
    manifests = {k[len(run + "checkpoints/"):-len("/manifest.json")]: k for k in keys
                 if k.startswith(run + "checkpoints/") and k.endswith("/manifest.json")}
    named = set()
    for k in manifests.values():
        body = s3.get_object(Bucket=bucket, Key=k)["Body"].read().decode()
        named |= set(re.findall(r"[0-9a-f]{64}", body))
    chunks = [k.rsplit("/", 1)[1] for k in keys if k.startswith(run + "chunks/")]
    leaked = [c for c in chunks if c not in named]
    if leaked:
        fail("after gc, %d chunks no kept checkpoint names (e.g. %s)" % (len(leaked), leaked[0]))
    # The ledger tells how each machine ended: those a notice stopped left "preempted", the
    # last one "finished", and the lost ones (SIGKILLed) nothing.
    hows = {}
    for k in keys:
        if k.startswith(run + "events/") and k.endswith("-exit.json"):
            how = json.loads(s3.get_object(Bucket=bucket, Key=k)["Body"].read())["how"]
            hows[how] = hows.get(how, 0) + 1
    want = {"finished": 1}
    if counts["preempt"] + counts["terminate"]:
        want["preempted"] = counts["preempt"] + counts["terminate"]
    if hows != want:
        fail("the ledger's exit events say %s, expected %s" % (hows, want))
    strays = [k for k in keys if k.startswith(run + "checkpoints/") and
              k[len(run + "checkpoints/"):].split("/", 1)[0] not in manifests]
    if strays:
        fail("after gc, marks of deleted checkpoints remain: %s" % strays[:3])
    return len(manifests), len(chunks)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin", required=True)
    ap.add_argument("--trainer", required=True)
    ap.add_argument("--store", required=True)
    ap.add_argument("--direct", required=True, help="the S3 server's own URL, past the proxy")
    ap.add_argument("--s3-dir", required=True, help="the S3 server's data, aged before gc")
    ap.add_argument("--work", required=True)
    ap.add_argument("--cycles", type=int, default=30)
    ap.add_argument("--seed", type=int, default=26)
    ap.add_argument("--every", type=int, default=20)
    a = ap.parse_args()
    rng = random.Random(a.seed)
    durable = 0   # the newest step any agent logged durable
    newest = 0    # the newest step any trainer committed
    counts = {e: 0 for e in EVENTS}
    t_start = time.monotonic()
    for n in range(a.cycles):
        m, event = cycle(a, n, rng)
        counts[event] += 1
        text = m.text()
        restored = steps(text, RESTORED)
        if restored and restored[0] < durable:
            fail("cycle %d restored step-%d, older than step-%d logged durable before (log %s)"
                 % (n, restored[0], durable, m.logpath))
        if not restored and durable and "started" in text and "fresh start" in text:
            fail("cycle %d started afresh with step-%d durable (log %s)" % (n, durable, m.logpath))
        durable = max([durable] + steps(text, DURABLE))
        newest = max([newest] + [int(s) for s in COMMITS.findall(text)])
        print("cycle %d: %-22s restored %-10s durable step-%d (%.1f s)"
              % (n, event, "step-%d" % restored[0] if restored else "-", durable,
                 time.monotonic() - m.t0), flush=True)
    # The last machine trains to the end undisturbed.
    final = (newest // a.every + 3) * a.every
    out = os.path.join(a.work, "final.json")
    m = Machine(a, a.cycles, ["--steps", str(final), "--out", out])
    try:
        rc = m.agent.wait(300)
    except subprocess.TimeoutExpired:
        m.lose()
        fail("the last machine did not finish")
    m.log.close()
    restored = steps(m.text(), RESTORED)
    if rc != 0 or not restored or restored[0] < durable:
        fail("the last machine: status %d, restored %s, durable step-%d (log %s)"
             % (rc, restored, durable, m.logpath))
    ref_dir = os.path.join(a.work, "reference")
    os.makedirs(ref_dir)
    ref = os.path.join(a.work, "reference.json")
    env = dict(os.environ, RESUME_RUN_CHECKPOINT_DIR=ref_dir)
    env.pop("RESUME_RUN_RESTORE_DIR", None)
    subprocess.run([PY, a.trainer, "--steps", str(final), "--every", str(final), "--step-time",
                    "0", "--out", ref], env=env, check=True, stdout=subprocess.DEVNULL)
    got, want = json.load(open(out)), json.load(open(ref))
    if got != want:
        fail("final weights differ from an uninterrupted run's: %s vs %s" % (got, want))
    v = subprocess.run([a.bin, "verify", "--store", a.store], capture_output=True, text=True)
    if v.returncode != 0:
        fail("verify: status %d\n%s%s" % (v.returncode, v.stdout, v.stderr))
    # Everything in the store an hour older (s3rver's object times are its files'), so that
    # gc's grace (at least 10 minutes) leaves no unreferenced chunk for being young.
    old = time.time() - 3600
    for root, _, files in os.walk(a.s3_dir):
        for f in files:
            os.utime(os.path.join(root, f), (old, old))
    g = subprocess.run([a.bin, "gc", "--store", a.store, "--keep", "3", "--gc-grace", "10m"],
                       capture_output=True, text=True)
    if g.returncode != 0:
        fail("gc: status %d: %s" % (g.returncode, g.stderr))
    kept, chunks = audit(a, counts)
    print("soak: %d cycles (%s) in %.0f s; final step-%d equal to an uninterrupted run's; "
          "verify clean; after gc %d checkpoints, %d chunks, none leaked"
          % (a.cycles, ", ".join("%s %d" % kv for kv in counts.items()),
             time.monotonic() - t_start, final, kept, chunks), flush=True)


if __name__ == "__main__":
    main()
