#!/usr/bin/env python3
"""Notice detection latency per cloud and the agent's idle cost while it watches.

usage: bench_notices.py RESUME_RUN_BINARY RUNS

For each cloud the project's metadata test server (tests/metadata/server.py) announces a
preemption while the agent supervises a trainer; the latency is from the moment the server
starts serving the announcement (its announce_visible_at) to the agent's log line saying it
signalled the trainer (--log-format json timestamps), median of RUNS with min and max.
The idle cost is the agent's CPU time and RSS over IDLE_SECONDS of watching with nothing
announced (/proc/PID/stat and /proc/PID/status). Prints Markdown for BENCHMARKS.md.
"""
import json
import random
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = os.path.join(ROOT, "tests", "metadata", "server.py")
IDLE_SECONDS = 20
POLL_S = {"aws": 2.0, "gcp": 2.0, "azure": 1.0}  # the agent's default poll intervals
TICK = os.sysconf("SC_CLK_TCK")


def start_server(cloud):
    p = subprocess.Popen([sys.executable, SERVER, "--cloud", cloud, "--port", "0",
                          "--control-port", "0"], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True)
    ports = {}
    while len(ports) < 2:
        word, port = p.stdout.readline().split()
        ports[word] = int(port)
    return p, f"http://127.0.0.1:{ports['ready']}", f"http://127.0.0.1:{ports['control']}"


def control(ctl, path, method="POST"):
    req = urllib.request.Request(f"{ctl}/_test/{path}", method=method)
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.load(r)


def start_agent(rr, cloud, url, work, trainer):
    env = dict(os.environ, RESUME_RUN_CLOUD=cloud, RESUME_RUN_METADATA_ENDPOINT=url)
    log = open(os.path.join(work, f"agent-{cloud}.log"), "w")
    p = subprocess.Popen([rr, "--log-format", "json", "--checkpoint-dir",
                          os.path.join(work, "ck"), "--store", f"file://{work}/store", "--"]
                         + trainer, stdout=log, stderr=log, env=env, cwd=work)
    return p, log.name


def wait_for_line(path, needle, timeout):
    end = time.time() + timeout
    while time.time() < end:
        with open(path) as f:
            for line in f:
                if needle in line:
                    return json.loads(line)
        time.sleep(0.02)
    raise SystemExit(f"no '{needle}' in {path} within {timeout} s")


def latency_once(rr, cloud):
    server, url, ctl = start_server(cloud)
    work = tempfile.mkdtemp(prefix="rr-bench-notice.")
    # A trainer that handles the checkpoint signal (the helper) and exits on the notice.
    trainer = [sys.executable, "-c",
               "import resume_run, time, os\n"
               "ck = resume_run.Checkpointer()\n"
               "while True:\n"
               "    if ck.requested():\n"
               "        with ck.commit('step-1') as d: open(os.path.join(d, 'x'), 'w').write('x')\n"
               "        if ck.should_exit(): break\n"
               "    time.sleep(0.005)\n"]
    agent, log = start_agent(rr, cloud, url, work, trainer)
    try:
        wait_for_line(log, "running on", 20)   # watching, identity known
        # At a random point of the poll cycle, so the median is not one lucky phase.
        time.sleep(1.0 + random.uniform(0, POLL_S[cloud]))
        control(ctl, "announce?in=0")
        asked = wait_for_line(log, "asked the trainer for a checkpoint", 30)
        visible = control(ctl, "state", "GET")["announce_visible_at"]
        agent.wait(timeout=60)
        return asked["ts"] - visible
    finally:
        if agent.poll() is None:
            agent.kill()
        server.send_signal(signal.SIGTERM)
        server.wait()
        subprocess.run(["rm", "-rf", work])


def idle_cost(rr, cloud):
    server, url, ctl = start_server(cloud)
    work = tempfile.mkdtemp(prefix="rr-bench-idle.")
    agent, log = start_agent(rr, cloud, url, work, ["sleep", str(IDLE_SECONDS + 30)])
    try:
        wait_for_line(log, "running on", 20)
        time.sleep(2)

        def cpu():
            fields = open(f"/proc/{agent.pid}/stat").read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / TICK

        c0, t0 = cpu(), time.time()
        time.sleep(IDLE_SECONDS)
        c1, t1 = cpu(), time.time()
        mem = {}
        for line in open(f"/proc/{agent.pid}/status"):
            if line.startswith(("VmRSS:", "RssAnon:", "RssFile:")):
                mem[line.split(":")[0]] = int(line.split()[1]) / 1024.0
        requests = control(ctl, "state", "GET").get("requests_total", 0)
        return 100.0 * (c1 - c0) / (t1 - t0), mem, requests
    finally:
        agent.send_signal(signal.SIGKILL)
        agent.wait()
        server.send_signal(signal.SIGTERM)
        server.wait()
        subprocess.run(["rm", "-rf", work])


def main():
    rr, runs = sys.argv[1], int(sys.argv[2])
    os.environ["PYTHONPATH"] = os.path.join(ROOT, "scripts")
    targets = {"aws": "poll interval (2 s) + 0.5 s = 2.5 s", "gcp": "0.5 s",
               "azure": "poll interval (1 s) + 0.5 s = 1.5 s"}
    print("| cloud | server announces → trainer signalled (median of %d, min–max) | target |" % runs)
    print("|---|---|---|")
    for cloud in ("aws", "gcp", "azure"):
        lat = sorted(latency_once(rr, cloud) for _ in range(runs))
        print(f"| {cloud} | **{statistics.median(lat):.2f} s** ({lat[0]:.2f}–{lat[-1]:.2f}) "
              f"| ≤ {targets[cloud]} |")
    print()
    print(f"Idle cost, {IDLE_SECONDS} s of watching with nothing announced (target: CPU under "
          "0.5% of a core, RSS under 10 MB):")
    print()
    print("| cloud | agent CPU (% of one core) | RSS (VmRSS) | of which private (RssAnon) "
          "| of which shared library pages (RssFile) | metadata requests |")
    print("|---|---|---|---|---|---|")
    for cloud in ("aws", "gcp", "azure"):
        cpu, mem, req = idle_cost(rr, cloud)
        print(f"| {cloud} | {cpu:.2f}% | {mem['VmRSS']:.1f} MB | {mem['RssAnon']:.1f} MB "
              f"| {mem['RssFile']:.1f} MB | {req} |")


if __name__ == "__main__":
    main()
