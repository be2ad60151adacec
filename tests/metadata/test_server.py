#!/usr/bin/python3
"""Self-test of tests/metadata/server.py: starts one server per cloud and exercises every
documented behaviour (the clouds' metadata documentation: EC2 IMDSv2, GCE metadata, Azure
Scheduled Events; amazon-ec2-metadata-mock's README) and the /_test/ control API.

run: /usr/bin/python3 tests/metadata/test_server.py [-v]     (about 10 s)
"""

import base64
import email.utils
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
import unittest
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
SERVER = os.path.join(HERE, "server.py")
SERVERS = {}   # cloud -> Srv


class Srv:
    """One running server.py: its ports and its stderr log (shown when a test fails)."""

    def __init__(self, cloud):
        self.cloud = cloud
        self.log_path = "/tmp/metadata-test-%s-%d.log" % (cloud, os.getpid())
        self.log = open(self.log_path, "w+")
        self.proc = subprocess.Popen([sys.executable, SERVER, "--cloud", cloud, "--port", "0"],
                                     stdout=subprocess.PIPE, stderr=self.log, text=True)
        lines = []
        for line in self.proc.stdout:
            lines.append(line.split())
            if line.startswith("ready "):
                break
        info = dict((w[0], int(w[1])) for w in lines if len(w) == 2)
        if "ready" not in info or "control" not in info:
            raise RuntimeError("%s server did not start: %r" % (cloud, lines))
        self.port, self.control = info["ready"], info["control"]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(5)
        self.log.close()
        os.unlink(self.log_path)

    def tail(self, n=30):
        with open(self.log_path) as f:
            return "".join(f.readlines()[-n:])


def request(port, method, path, headers=None, body=None, timeout=5):
    """One request on a fresh connection: (status, headers dict lower-cased, body bytes)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data
    finally:
        c.close()


def ctl(srv, method, path):
    status, _, body = request(srv.control, method, path)
    return status, json.loads(body)


def parse_rfc3339(s):
    return email.utils.mktime_tz((int(s[0:4]), int(s[5:7]), int(s[8:10]), int(s[11:13]),
                                  int(s[14:16]), int(s[17:19]), 0, 1, -1, 0))


class Base(unittest.TestCase):
    cloud = None

    @property
    def srv(self):
        return SERVERS[self.cloud]

    def setUp(self):
        self.assertEqual(ctl(self.srv, "POST", "/_test/reset")[0], 200)

    def run(self, result=None):
        # On failure, show the server's recent request log.
        n = len(result.failures) + len(result.errors) if result else 0
        out = super().run(result)
        if result and len(result.failures) + len(result.errors) > n:
            sys.stderr.write("\n--- %s server log ---\n%s" % (self.cloud, self.srv.tail()))
        return out

    def get(self, path, headers=None, method="GET", body=None, timeout=5):
        return request(self.srv.port, method, path, headers, body, timeout)

    def state(self):
        return ctl(self.srv, "GET", "/_test/state")[1]


# ------------------------------------------- AWS ---------------------------------------------

class AwsTest(Base):
    cloud = "aws"
    TTL = "X-aws-ec2-metadata-token-ttl-seconds"

    def token(self, ttl="21600"):
        st, h, body = self.get("/latest/api/token", {self.TTL: ttl}, "PUT")
        self.assertEqual(st, 200)
        return body.decode()

    def md(self, path, token, method="GET"):
        return self.get("/latest/meta-data/" + path, {"X-aws-ec2-metadata-token": token},
                        method)

    def test_token_put(self):
        st, h, body = self.get("/latest/api/token", {self.TTL: "21600"}, "PUT")
        self.assertEqual(st, 200)
        self.assertTrue(h["content-type"].startswith("text/plain"))
        self.assertEqual(h[self.TTL.lower()], "21600")
        self.assertGreaterEqual(len(body), 20)
        self.assertNotEqual(body, self.token())            # random
        for bad in ("0", "21601", "abc", "-5", ""):
            self.assertEqual(self.get("/latest/api/token", {self.TTL: bad}, "PUT")[0], 400, bad)
        self.assertEqual(self.get("/latest/api/token", method="PUT")[0], 400)   # missing
        st, _, _ = self.get("/latest/api/token",
                            {self.TTL: "60", "X-Forwarded-For": "10.0.0.1"}, "PUT")
        self.assertEqual(st, 403)
        self.assertEqual(self.get("/2021-03-23/api/token", {self.TTL: "60"}, "PUT")[0], 403)
        self.assertEqual(self.state()["tokens_issued"], 2)

    def test_token_required(self):
        self.assertEqual(self.get("/latest/meta-data/instance-id")[0], 401)
        self.assertEqual(self.md("instance-id", "bogus")[0], 401)
        self.assertEqual(self.get("/latest/dynamic/instance-identity/document")[0], 401)
        tok = self.token("3600")
        st, h, body = self.md("instance-id", tok)
        self.assertEqual((st, body), (200, b"i-0123456789abcdef0"))
        self.assertTrue(h["content-type"].startswith("text/plain"))
        self.assertIn(int(h[self.TTL.lower()]), (3599, 3600))  # remaining TTL
        st, h, body = self.md("instance-id", tok, "HEAD")
        self.assertEqual((st, body, h["content-length"]), (200, b"", "19"))
        for m in ("POST", "PUT", "DELETE"):
            self.assertEqual(self.md("instance-id", tok, m)[0], 405, m)
        self.assertEqual(self.state()["unauthorized_401"], 3)

    def test_token_ttl_expiry(self):
        tok = self.token("1")
        self.assertEqual(self.md("instance-id", tok)[0], 200)
        time.sleep(1.1)
        self.assertEqual(self.md("instance-id", tok)[0], 401)

    def test_expire_tokens(self):
        tok = self.token()
        self.assertEqual(self.md("instance-id", tok)[0], 200)
        self.assertEqual(ctl(self.srv, "POST", "/_test/expire-tokens")[0], 200)
        self.assertEqual(self.md("instance-id", tok)[0], 401)
        self.assertEqual(self.md("instance-id", self.token())[0], 200)
        s = self.state()
        self.assertEqual((s["tokens_issued"], s["unauthorized_sent"], s["unauthorized_401"]),
                         (2, 1, 1))

    def test_data(self):
        tok = self.token()
        want = {"instance-id": "i-0123456789abcdef0", "instance-type": "g5.xlarge",
                "placement/availability-zone": "us-east-1a", "instance-life-cycle": "spot",
                "iam/security-credentials/": "resume-run-role",
                "events/maintenance/scheduled": "[]"}
        for path, value in want.items():
            st, _, body = self.md(path, tok)
            self.assertEqual((st, body.decode()), (200, value), path)
        st, _, body = self.md("iam/security-credentials/resume-run-role", tok)
        c = json.loads(body)
        self.assertEqual((c["Code"], c["Type"], c["AccessKeyId"], c["SecretAccessKey"],
                          c["Token"]), ("Success", "AWS-HMAC", "S3RVER", "S3RVER",
                                        "imds-session-token"))
        self.assertAlmostEqual(parse_rfc3339(c["Expiration"]), time.time() + 6 * 3600,
                               delta=60)
        self.assertIn("LastUpdated", c)
        st, _, body = self.md("", tok)
        self.assertIn(b"instance-id", body.split(b"\n"))
        for path in ("spot/instance-action", "spot/termination-time",
                     "events/recommendations/rebalance", "no-such-thing"):
            self.assertEqual(self.md(path, tok)[0], 404, path)
        # Wrong-cloud probes: GCP and Azure paths are absent here.
        self.assertEqual(self.get("/computeMetadata/v1/instance/id",
                                  {"Metadata-Flavor": "Google"})[0], 404)
        self.assertEqual(self.get("/metadata/scheduledevents?api-version=2020-07-01",
                                  {"Metadata": "true"})[0], 404)

    def test_announce_now(self):
        tok = self.token()
        self.assertEqual(self.md("spot/instance-action", tok)[0], 404)
        t0 = time.time()
        st, r = ctl(self.srv, "POST", "/_test/announce")
        self.assertEqual((st, r["ok"]), (200, True))
        st, _, body = self.md("spot/instance-action", tok)
        self.assertEqual(st, 200)
        self.assertRegex(body.decode(),
                         r'^\{"action": "terminate", "time": "\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"\}$')
        when = parse_rfc3339(json.loads(body)["time"])
        self.assertAlmostEqual(when, t0 + 120, delta=2)
        st, _, legacy = self.md("spot/termination-time", tok)
        self.assertEqual((st, legacy.decode()), (200, json.loads(body)["time"]))
        time.sleep(1.1)   # the time is fixed at announce time, not per request
        self.assertEqual(self.md("spot/instance-action", tok)[2], body)
        s = self.state()
        self.assertAlmostEqual(s["announced_at"], t0, delta=1)
        self.assertGreaterEqual(s["announce_observed_at"], s["announced_at"])
        self.assertEqual(s["counters"]["/latest/meta-data/spot/instance-action"]["GET"], 3)

    def test_announce_delayed(self):
        tok = self.token()
        t0 = time.time()
        self.assertEqual(ctl(self.srv, "POST", "/_test/announce?in=0.6")[0], 200)
        self.assertEqual(self.md("spot/instance-action", tok)[0], 404)
        self.assertIsNone(self.state()["announced_at"])
        time.sleep(0.8)
        self.assertEqual(self.md("spot/instance-action", tok)[0], 200)
        self.assertGreaterEqual(self.state()["announced_at"], t0 + 0.6)
        self.assertEqual(ctl(self.srv, "POST", "/_test/announce?in=abc")[0], 400)

    def test_rebalance_and_maintenance(self):
        tok = self.token()
        self.assertEqual(ctl(self.srv, "POST", "/_test/rebalance")[0], 200)
        st, _, body = self.md("events/recommendations/rebalance", tok)
        self.assertEqual(st, 200)
        self.assertAlmostEqual(parse_rfc3339(json.loads(body)["noticeTime"]), time.time(),
                               delta=2)
        self.assertEqual(ctl(self.srv, "POST", "/_test/maintenance")[0], 200)
        st, _, body = self.md("events/maintenance/scheduled", tok)
        ev = json.loads(body)
        self.assertEqual((st, len(ev)), (200, 1))
        e = ev[0]
        self.assertEqual((e["Code"], e["State"]), ("system-reboot", "active"))
        self.assertTrue(e["EventId"].startswith("instance-event-"))
        self.assertIn("Description", e)
        date_re = r"^\d{1,2} [A-Z][a-z]{2} \d{4} \d\d:\d\d:\d\d GMT$"
        self.assertRegex(e["NotBefore"], date_re)
        self.assertRegex(e["NotAfter"], date_re)
        nb = email.utils.mktime_tz(email.utils.parsedate_tz(e["NotBefore"]))
        self.assertAlmostEqual(nb, time.time() + 600, delta=5)

    def test_reset(self):
        tok = self.token()
        ctl(self.srv, "POST", "/_test/announce")
        ctl(self.srv, "POST", "/_test/announce?in=0.3")   # cancelled by the reset
        ctl(self.srv, "POST", "/_test/reset")
        time.sleep(0.4)
        self.assertEqual(self.md("spot/instance-action", tok)[0], 404)
        s = self.state()
        self.assertIsNone(s["announced_at"])

    def test_keep_alive(self):
        tok = self.token()
        c = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=5)
        c.request("GET", "/latest/meta-data/instance-type", headers={
            "X-aws-ec2-metadata-token": tok})
        r = c.getresponse()
        self.assertEqual(r.read(), b"g5.xlarge")
        sock = c.sock
        for path in ("spot/instance-action", "instance-id", "nope"):   # incl. a 404
            c.request("GET", "/latest/meta-data/" + path,
                      headers={"X-aws-ec2-metadata-token": tok})
            r = c.getresponse()
            r.read()
            self.assertIsNotNone(r.getheader("Content-Length"))
        self.assertIs(c.sock, sock)     # still the same connection
        c.close()

    def test_control_api(self):
        self.assertEqual(ctl(self.srv, "GET", "/_test/announce")[0], 405)
        self.assertEqual(ctl(self.srv, "POST", "/_test/nope")[0], 404)
        self.assertEqual(ctl(self.srv, "POST", "/_test/fail?mode=weird")[0], 400)
        self.assertEqual(request(self.srv.control, "GET", "/latest/meta-data/")[0], 404)
        # The main port serves /_test/ too while it is up.
        st, _, body = self.get("/_test/state")
        self.assertEqual((st, json.loads(body)["cloud"]), (200, "aws"))

    # ---- fail modes (shared by all clouds) ----

    def test_fail_503_429(self):
        tok = self.token()
        self.assertEqual(ctl(self.srv, "POST", "/_test/fail?mode=503&for=0.5")[0], 200)
        self.assertEqual(self.md("instance-id", tok)[0], 503)
        self.assertEqual(self.get("/latest/api/token", {self.TTL: "60"}, "PUT")[0], 503)
        self.assertEqual(self.get("/_test/state")[0], 200)    # /_test/ is exempt
        time.sleep(0.6)
        self.assertEqual(self.md("instance-id", tok)[0], 200)
        ctl(self.srv, "POST", "/_test/fail?mode=429&for=0.5")
        st, h, _ = self.md("instance-id", tok)
        self.assertEqual((st, h.get("retry-after")), (429, "1"))
        time.sleep(0.6)
        self.assertEqual(self.md("instance-id", tok)[0], 200)
        self.assertEqual(self.state()["statuses"]["/latest/meta-data/instance-id"],
                         {"503": 1, "200": 2, "429": 1})

    def test_fail_hang(self):
        tok = self.token()
        ctl(self.srv, "POST", "/_test/fail?mode=hang&for=1.2")
        t0 = time.time()
        with self.assertRaises(TimeoutError):
            self.md_timeout(tok, 0.4)
        # A client with patience sees the connection closed without an answer at the end.
        with self.assertRaises((http.client.RemoteDisconnected, ConnectionError)):
            self.md_timeout(tok, 5)
        self.assertAlmostEqual(time.time() - t0, 1.2, delta=0.4)
        self.assertEqual(self.md("instance-id", tok)[0], 200)

    def md_timeout(self, tok, timeout):
        return self.get("/latest/meta-data/instance-id", {"X-aws-ec2-metadata-token": tok},
                        timeout=timeout)

    def test_fail_reset(self):
        tok = self.token()
        ctl(self.srv, "POST", "/_test/fail?mode=reset&for=0.5")
        with self.assertRaises(ConnectionResetError):
            self.md("instance-id", tok)
        time.sleep(0.6)
        self.assertEqual(self.md("instance-id", tok)[0], 200)

    def test_fail_down(self):
        tok = self.token()
        c = http.client.HTTPConnection("127.0.0.1", self.srv.port, timeout=5)
        c.request("GET", "/latest/meta-data/instance-id",
                  headers={"X-aws-ec2-metadata-token": tok})
        self.assertEqual(c.getresponse().read(), b"i-0123456789abcdef0")
        self.assertEqual(ctl(self.srv, "POST", "/_test/fail?mode=down&for=1")[0], 200)
        with self.assertRaises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", self.srv.port), timeout=2)
        # An open keep-alive connection dies too.
        with self.assertRaises((ConnectionError, http.client.RemoteDisconnected)):
            c.request("GET", "/latest/meta-data/instance-id",
                      headers={"X-aws-ec2-metadata-token": tok})
            c.getresponse().read()
        c.close()
        self.assertFalse(self.state()["listening"])   # the control port still answers
        time.sleep(1.2)
        self.assertEqual(self.md("instance-id", tok)[0], 200)   # same port again
        self.assertTrue(self.state()["listening"])

    def test_fail_down_ended_by_reset(self):
        ctl(self.srv, "POST", "/_test/fail?mode=down&for=30")
        with self.assertRaises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", self.srv.port), timeout=2)
        ctl(self.srv, "POST", "/_test/reset")
        self.assertEqual(self.get("/latest/meta-data/instance-id")[0], 401)


# ------------------------------------------- GCP ---------------------------------------------

class GcpTest(Base):
    cloud = "gcp"
    H = {"Metadata-Flavor": "Google"}
    V1 = "/computeMetadata/v1/"

    def md(self, path, timeout=5):
        return self.get(self.V1 + path, self.H, timeout=timeout)

    def test_header_required(self):
        st, h, body = self.get(self.V1 + "instance/preempted")
        self.assertEqual(st, 403)
        self.assertTrue(h["content-type"].startswith("text/plain"))
        self.assertIn(b"Metadata-Flavor", body)
        st, h, body = self.get(self.V1 + "instance/preempted", {"Metadata-Flavor": "google2"})
        self.assertEqual(st, 403)

    def test_data(self):
        want = {"instance/preempted": "FALSE", "instance/maintenance-event": "NONE",
                "instance/machine-type": "projects/123/machineTypes/a2-highgpu-1g",
                "instance/zone": "projects/123/zones/us-central1-a",
                "instance/scheduling/provisioning-model": "SPOT"}
        for path, value in want.items():
            st, h, body = self.md(path)
            self.assertEqual((st, body.decode()), (200, value), path)
            self.assertEqual(h["metadata-flavor"], "Google")
            self.assertRegex(h["etag"], r"^[0-9a-f]{16}$")
        st, _, body = self.md("instance/id")
        self.assertTrue(st == 200 and body.isdigit())
        st, _, body = self.md("instance/service-accounts/default/token")
        self.assertEqual(json.loads(body), {"access_token": "gcp-token", "expires_in": 3599,
                                            "token_type": "Bearer"})
        st, _, body = self.md("instance/")
        self.assertIn(b"preempted", body.split(b"\n"))
        self.assertEqual(self.md("instance/no-such")[0], 404)
        # Wrong-cloud probes: an AWS token PUT and an Azure GET fail.
        st, _, _ = self.get("/latest/api/token",
                            {"X-aws-ec2-metadata-token-ttl-seconds": "60"}, "PUT")
        self.assertIn(st, (404, 405))
        self.assertEqual(self.get("/latest/meta-data/instance-id")[0], 404)
        self.assertEqual(self.get("/metadata/instance?api-version=2021-02-01",
                                  {"Metadata": "true"})[0], 404)
        self.assertEqual(ctl(self.srv, "POST", "/_test/rebalance")[0], 400)
        self.assertEqual(ctl(self.srv, "POST", "/_test/expire-tokens")[0], 400)

    def test_announce_and_etag(self):
        st, h, body = self.md("instance/preempted")
        etag0 = h["etag"]
        ctl(self.srv, "POST", "/_test/announce")
        st, h, body = self.md("instance/preempted")
        self.assertEqual(body, b"TRUE")
        self.assertNotEqual(h["etag"], etag0)
        ctl(self.srv, "POST", "/_test/maintenance")
        self.assertEqual(self.md("instance/maintenance-event")[2],
                         b"TERMINATE_ON_HOST_MAINTENANCE")
        self.assertIsNotNone(self.state()["announced_at"])

    def test_hanging_get_mismatch_returns_at_once(self):
        t0 = time.time()
        st, h, body = self.md("instance/preempted?wait_for_change=true&last_etag=0")
        self.assertEqual((st, body), (200, b"FALSE"))
        self.assertLess(time.time() - t0, 0.5)

    def test_hanging_get_timeout(self):
        etag = self.md("instance/preempted")[1]["etag"]
        t0 = time.time()
        st, h, body = self.md("instance/preempted?wait_for_change=true&last_etag=%s"
                              "&timeout_sec=1" % etag)
        self.assertEqual((st, body, h["etag"]), (200, b"FALSE", etag))
        self.assertAlmostEqual(time.time() - t0, 1.0, delta=0.4)

    def test_hanging_get_woken_by_announce(self):
        etag = self.md("instance/preempted")[1]["etag"]
        out = {}

        def waiter():
            out["r"] = self.md("instance/preempted?wait_for_change=true&last_etag=%s" % etag,
                               timeout=10)
            out["t"] = time.time()

        th = threading.Thread(target=waiter)
        th.start()
        time.sleep(0.3)
        self.assertEqual(self.state()["hanging_gets_now"], 1)
        ctl(self.srv, "POST", "/_test/announce?in=0.3")
        th.join(10)
        st, h, body = out["r"]
        self.assertEqual((st, body), (200, b"TRUE"))
        self.assertNotEqual(h["etag"], etag)
        s = self.state()
        self.assertLess(out["t"] - s["announced_at"], 0.3)   # woken at once
        self.assertEqual(s["etags"]["instance/preempted"], h["etag"])

    def test_hanging_get_maintenance(self):
        st, h, _ = self.md("instance/maintenance-event")
        ctl(self.srv, "POST", "/_test/maintenance?in=0.3")
        t0 = time.time()
        st, h2, body = self.md("instance/maintenance-event?wait_for_change=true&last_etag="
                               + h["etag"])
        self.assertEqual(body, b"TERMINATE_ON_HOST_MAINTENANCE")
        self.assertLess(time.time() - t0, 1.5)

    def test_fail_503(self):
        ctl(self.srv, "POST", "/_test/fail?mode=503&for=0.4")
        self.assertEqual(self.md("instance/preempted")[0], 503)
        time.sleep(0.5)
        self.assertEqual(self.md("instance/preempted")[0], 200)


# ------------------------------------------ Azure --------------------------------------------

class AzureTest(Base):
    cloud = "azure"
    H = {"Metadata": "true"}
    SE = "/metadata/scheduledevents?api-version=2020-07-01"

    def doc(self):
        st, h, body = self.get(self.SE, self.H)
        self.assertEqual(st, 200)
        self.assertTrue(h["content-type"].startswith("application/json"))
        return json.loads(body)

    def ack(self, body):
        return self.get(self.SE, dict(self.H, **{"Content-Type": "application/json"}), "POST",
                        body)[0]

    def test_header_and_version_required(self):
        st, h, body = self.get(self.SE)
        self.assertEqual(st, 400)
        self.assertIn("Required metadata header", json.loads(body)["error"])
        st, _, body = self.get("/metadata/scheduledevents", self.H)
        self.assertEqual(st, 400)
        self.assertIn("api-version", json.loads(body)["error"])
        # Wrong-cloud probes: AWS token PUT, GCP GET.
        st, _, _ = self.get("/latest/api/token",
                            {"X-aws-ec2-metadata-token-ttl-seconds": "60"}, "PUT")
        self.assertIn(st, (400, 404))
        self.assertIn(self.get("/computeMetadata/v1/instance/id",
                               {"Metadata-Flavor": "Google"})[0], (400, 404))
        self.assertEqual(ctl(self.srv, "POST", "/_test/rebalance")[0], 400)

    def test_empty_then_preempt(self):
        d0 = self.doc()
        self.assertEqual(d0["Events"], [])
        t0 = time.time()
        ctl(self.srv, "POST", "/_test/announce")
        d = self.doc()
        self.assertEqual(d["DocumentIncarnation"], d0["DocumentIncarnation"] + 1)
        (e,) = d["Events"]
        self.assertEqual({k: e[k] for k in ("EventType", "ResourceType", "Resources",
                                            "EventStatus", "EventSource",
                                            "DurationInSeconds")},
                         {"EventType": "Preempt", "ResourceType": "VirtualMachine",
                          "Resources": ["rr-vm-1"], "EventStatus": "Scheduled",
                          "EventSource": "Platform", "DurationInSeconds": -1})
        self.assertRegex(e["EventId"], r"^[0-9A-F-]{36}$")
        self.assertTrue(e["Description"])
        self.assertRegex(e["NotBefore"], r"^[A-Z][a-z]{2}, \d\d [A-Z][a-z]{2} \d{4} "
                                         r"\d\d:\d\d:\d\d GMT$")
        nb = email.utils.mktime_tz(email.utils.parsedate_tz(e["NotBefore"]))
        self.assertAlmostEqual(nb, t0 + 30, delta=2)
        s = self.state()
        self.assertEqual(s["incarnation"], d["DocumentIncarnation"])
        self.assertGreaterEqual(s["announce_observed_at"], s["announced_at"])
        # An API version from before Preempt existed (2017-11-01) does not show it.
        st, _, body = self.get("/metadata/scheduledevents?api-version=2017-08-01", self.H)
        self.assertEqual(json.loads(body)["Events"], [])

    def test_ack(self):
        ctl(self.srv, "POST", "/_test/announce")
        d = self.doc()
        eid = d["Events"][0]["EventId"]
        self.assertEqual(self.ack(b"{not json"), 400)
        self.assertEqual(self.ack(b'{"StartRequests": 5}'), 400)
        self.assertEqual(self.ack(json.dumps(
            {"StartRequests": [{"EventId": "00000000-0000-0000-0000-000000000000"}]})), 400)
        self.assertEqual(self.ack(json.dumps({"StartRequests": [{"EventId": eid}]})), 200)
        d2 = self.doc()
        e = d2["Events"][0]
        self.assertEqual((e["EventStatus"], e["NotBefore"]), ("Started", ""))
        self.assertEqual(d2["DocumentIncarnation"], d["DocumentIncarnation"] + 1)
        # Approving again is still 200 (Microsoft's "Azure Metadata Service: Scheduled
        # Events" page) and changes nothing.
        self.assertEqual(self.ack(json.dumps({"StartRequests": [{"EventId": eid}]})), 200)
        self.assertEqual(self.doc()["DocumentIncarnation"], d2["DocumentIncarnation"])
        s = self.state()
        self.assertEqual(s["acks"], [eid, eid])
        self.assertEqual(len(s["acks_rejected"]), 1)
        # Without the header the POST is refused.
        self.assertEqual(self.get(self.SE, None, "POST", b"{}")[0], 400)

    def test_maintenance_other_vm(self):
        ctl(self.srv, "POST", "/_test/maintenance")
        d = self.doc()
        types = {e["EventType"]: e for e in d["Events"]}
        self.assertEqual(set(types), {"Reboot", "Freeze"})
        self.assertEqual(types["Reboot"]["Resources"], ["rr-vm-1"])
        self.assertNotIn("rr-vm-1", types["Freeze"]["Resources"])
        nb = email.utils.mktime_tz(email.utils.parsedate_tz(types["Reboot"]["NotBefore"]))
        self.assertAlmostEqual(nb, time.time() + 900, delta=5)

    def test_reset_bumps_incarnation(self):
        ctl(self.srv, "POST", "/_test/announce")
        n = self.doc()["DocumentIncarnation"]
        ctl(self.srv, "POST", "/_test/reset")
        d = self.doc()
        self.assertEqual(d["Events"], [])
        self.assertGreater(d["DocumentIncarnation"], n)

    def test_instance(self):
        st, _, body = self.get("/metadata/instance?api-version=2021-02-01", self.H)
        self.assertEqual(st, 200)
        c = json.loads(body)["compute"]
        self.assertEqual({k: c[k] for k in ("name", "vmSize", "location", "zone", "priority",
                                            "evictionPolicy")},
                         {"name": "rr-vm-1", "vmSize": "Standard_NC6s_v3",
                          "location": "eastus", "zone": "1", "priority": "Spot",
                          "evictionPolicy": "Delete"})
        self.assertRegex(c["vmId"], r"^[0-9a-f-]{36}$")
        self.assertIn("network", json.loads(body))
        self.assertEqual(self.get("/metadata/instance?api-version=2021-02-01")[0], 400)
        st, _, body = self.get("/metadata/instance/compute/vmSize?api-version=2021-02-01"
                               "&format=text", self.H)
        self.assertEqual((st, body), (200, b"Standard_NC6s_v3"))


    def claims(self, token):
        payload = token.split(".")[1]
        return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))

    def test_managed_identity_tokens(self):
        mi = ("/metadata/identity/oauth2/token?api-version=2018-02-01"
              "&resource=https%3A%2F%2Fstorage.azure.com%2F")
        self.assertEqual(self.get(mi)[0], 400)  # no Metadata header
        st, _, body = self.get(mi, self.H)
        self.assertEqual(st, 200)
        a = json.loads(body)
        self.assertEqual((a["token_type"], a["resource"], a["client_id"]),
                         ("Bearer", "https://storage.azure.com/", "system-assigned"))
        self.assertTrue(all(isinstance(a[k], str) for k in ("expires_in", "expires_on")))
        c = self.claims(a["access_token"])
        self.assertEqual((c["aud"], c["iss"]), ("https://storage.azure.com",
                                                "https://sts.windows.net/rr-tenant/"))
        self.assertEqual(c["exp"], int(a["expires_on"]))
        # A user-assigned identity is asked for by client id; an unknown one is refused.
        self.assertEqual(self.get(mi + "&client_id=uai-1", self.H)[0], 400)
        ctl(self.srv, "POST", "/_test/identity?user_assigned=uai-1&lifetime=60&jwt_lifetime=5")
        st, _, body = self.get(mi + "&client_id=uai-1", self.H)
        a = json.loads(body)
        self.assertEqual((st, a["client_id"], a["expires_in"]), (200, "uai-1", "60"))
        c = self.claims(a["access_token"])
        self.assertEqual(c["exp"] - c["iat"], 5)  # ends sooner than advertised
        self.assertEqual(self.get(mi.split("&resource")[0], self.H)[0], 400)
        s = self.state()
        self.assertEqual([t["client_id"] for t in s["identity_tokens"][-2:]],
                         ["system-assigned", "uai-1"])
        ctl(self.srv, "POST", "/_test/identity?lifetime=3600&jwt_lifetime=3600")

    def test_entra_client_credentials(self):
        ctl(self.srv, "POST", "/_test/identity?client_id=app-9&client_secret=s3&federated=jwt-a")
        form = {"grant_type": "client_credentials", "client_id": "app-9",
                "scope": "https://storage.azure.com/.default"}
        hdr = {"Content-Type": "application/x-www-form-urlencoded"}

        def post(extra, tenant="rr-tenant"):
            st, _, body = self.get("/%s/oauth2/v2.0/token" % tenant, hdr, "POST",
                                   urllib.parse.urlencode(dict(form, **extra)))
            return st, json.loads(body)

        st, a = post({"client_secret": "s3"})
        self.assertEqual((st, a["token_type"]), (200, "Bearer"))
        self.assertIsInstance(a["expires_in"], int)
        self.assertEqual(self.claims(a["access_token"])["appid"], "app-9")
        self.assertEqual(post({"client_secret": "wrong"})[1]["error"], "invalid_client")
        self.assertEqual(post({"client_secret": "s3"}, tenant="other")[0], 400)
        jb = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
        st, a = post({"client_assertion_type": jb, "client_assertion": "jwt-a"})
        self.assertEqual(st, 200)
        st, a = post({"client_assertion_type": jb, "client_assertion": "jwt-old"})
        self.assertEqual((st, a["error"]), (400, "invalid_client"))
        flows = [t["flow"] for t in self.state()["identity_tokens"][-2:]]
        self.assertEqual(flows, ["secret", "workload"])


def setUpModule():
    try:
        for cloud in ("aws", "gcp", "azure"):
            SERVERS[cloud] = Srv(cloud)
    except BaseException:
        tearDownModule()   # unittest skips it when setUpModule fails
        raise


def tearDownModule():
    for s in SERVERS.values():
        s.stop()


if __name__ == "__main__":
    unittest.main()
