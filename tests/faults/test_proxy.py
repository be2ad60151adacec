#!/usr/bin/python3
"""Self-test of tests/faults/proxy.py: a small in-process upstream that stores what is PUT,
the proxy in front of it, and every fault checked from both sides (what the client saw, what
reached the server).

run: /usr/bin/python3 tests/faults/test_proxy.py [-v]     (about 10 s)
"""

import datetime
import hashlib
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
import unittest
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
PROXY = os.path.join(HERE, "proxy.py")


class Upstream(BaseHTTPRequestHandler):
    """Stores PUT bodies by path, answers GET with them; counts what arrived."""
    protocol_version = "HTTP/1.1"
    objects = {}
    arrived = []
    auth = []

    def log_message(self, fmt, *args):
        pass

    def _send(self, status, body=b""):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("ETag", '"%s"' % hashlib.md5(body).hexdigest())
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_PUT(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(n)
        Upstream.arrived.append(("PUT", self.path))
        Upstream.objects[self.path] = body
        Upstream.auth.append(self.headers.get("Authorization"))
        self._send(200)

    def do_GET(self):
        Upstream.arrived.append((self.command, self.path))
        Upstream.auth.append(self.headers.get("Authorization"))
        if self.path in Upstream.objects:
            self._send(200, Upstream.objects[self.path])
        else:
            self._send(404, b"<Error><Code>NoSuchKey</Code></Error>")

    do_HEAD = do_GET


class ProxyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.up = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
        cls.up.daemon_threads = True
        threading.Thread(target=cls.up.serve_forever, daemon=True).start()
        cls.proc = subprocess.Popen(
            [sys.executable, PROXY, "--upstream", "127.0.0.1:%d" % cls.up.server_address[1],
             "--s3-preconditions", "AKID:sec/ret:us-east-1"],
            stdout=subprocess.PIPE, text=True)
        ports = {}
        for line in cls.proc.stdout:
            k, v = line.split()
            ports[k] = int(v)
            if k == "ready":
                break
        cls.port, cls.ctl = ports["ready"], ports["control"]

    @classmethod
    def tearDownClass(cls):
        cls.proc.terminate()
        cls.proc.wait(5)
        cls.up.shutdown()

    def setUp(self):
        self.control("DELETE", "/rules")
        self.control("DELETE", "/log")
        Upstream.objects.clear()
        del Upstream.arrived[:]
        del Upstream.auth[:]

    def control(self, method, path, obj=None):
        c = http.client.HTTPConnection("127.0.0.1", self.ctl, timeout=5)
        c.request(method, path, body=json.dumps(obj) if obj is not None else None)
        r = c.getresponse()
        data = json.loads(r.read() or b"null")
        c.close()
        return r.status, data

    def rule(self, **r):
        st, data = self.control("POST", "/rules", r)
        self.assertEqual(st, 200, data)

    def req(self, method, path, body=None, headers=None, conn=None, timeout=10):
        c = conn or http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        if not conn:
            c.close()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), data

    def test_forwards_requests_on_one_kept_connection(self):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        self.assertEqual(self.req("PUT", "/b/k", b"hello", conn=c)[0], 200)
        st, _, data = self.req("GET", "/b/k", conn=c)
        self.assertEqual((st, data), (200, b"hello"))
        self.assertEqual(self.req("GET", "/b/missing", conn=c)[0], 404)
        c.close()
        self.assertEqual(len(self.control("GET", "/log")[1]), 3)

    def test_error_answers_have_exactly_the_asked_length(self):
        for status, code in ((503, "SlowDown"), (500, "InternalError")):
            for n in (0, 1, 109, 250, 5000, 100000):
                self.setUp()
                self.rule(method="GET", action="error", status=status, code=code, body_len=n)
                st, hs, data = self.req("GET", "/b/k")
                self.assertEqual(st, status)
                self.assertEqual(len(data), n)
                self.assertEqual(hs["content-type"], "application/xml")
                if n >= 250:  # long enough for the whole document: well-formed S3 XML
                    root = ET.fromstring(data)
                    self.assertEqual(root.tag, "Error")
                    self.assertEqual(root.findtext("Code"), code)
                    self.assertTrue(root.findtext("RequestId"))
                    self.assertTrue(root.findtext("Message"))
                self.assertEqual(Upstream.arrived, [])  # never forwarded

    def test_azure_requests_get_azure_errors_with_retry_after(self):
        self.rule(method="PUT", action="error", status=503, retry_after=2)
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        c.request("PUT", "/devstoreaccount1/c/b", body=b"x",
                  headers={"x-ms-version": "2021-08-06"})
        r = c.getresponse()
        data = r.read()
        c.close()
        self.assertEqual((r.status, r.reason), (503, "The server is busy."))
        self.assertEqual(r.getheader("x-ms-error-code"), "ServerBusy")
        self.assertEqual(r.getheader("Retry-After"), "2")
        self.assertTrue(r.getheader("x-ms-request-id"))
        self.assertTrue(data.startswith(b"\xef\xbb\xbf<?xml"))  # Azure's byte order mark
        root = ET.fromstring(data[3:])
        self.assertEqual(root.findtext("Code"), "ServerBusy")
        self.assertRegex(root.findtext("Message"), r"^The server is busy\.\nRequestId:[0-9a-f-]{36}"
                                                   r"\nTime:\d{4}-")
        self.rule(method="GET", action="error", status=500, code="OperationTimedOut")
        st, hs, data = self.req("GET", "/devstoreaccount1/c/b",
                                headers={"x-ms-version": "2021-08-06"})
        self.assertEqual((st, hs["x-ms-error-code"]), (500, "OperationTimedOut"))
        self.assertNotIn("retry-after", hs)
        # Without x-ms-version: S3's document, with the Retry-After asked for.
        self.rule(method="HEAD", action="error", status=503, retry_after=1)
        st, hs, _ = self.req("HEAD", "/b/k")
        self.assertEqual((st, hs.get("retry-after"), hs.get("x-ms-error-code")), (503, "1", None))
        self.assertEqual(Upstream.arrived, [])

    def test_nth_fires_once_on_the_nth_matching_request(self):
        self.rule(method="PUT", path="/chunks/", nth=2, action="error")
        results = [self.req("PUT", "/b/chunks/%d" % i, b"x")[0] for i in range(4)]
        self.assertEqual(self.req("PUT", "/b/other", b"x")[0], 200)
        self.assertEqual(results, [200, 503, 200, 200])
        rules = self.control("GET", "/rules")[1]
        self.assertEqual((rules[0]["matched"], rules[0]["fired"]), (4, 1))

    def test_every_with_after_and_times(self):
        self.rule(method="GET", every=2, after=1, times=2, action="error", status=500)
        self.req("PUT", "/b/k", b"v")
        got = [self.req("GET", "/b/k")[0] for _ in range(7)]
        # first let through, then every 2nd of the rest fires, at most twice
        self.assertEqual(got, [200, 500, 200, 500, 200, 200, 200])

    def test_reset_mid_body_reaches_nothing(self):
        self.rule(method="PUT", nth=1, action="reset_mid_body")
        with self.assertRaises((ConnectionError, http.client.HTTPException, OSError)):
            self.req("PUT", "/b/k", b"x" * 200000)
        self.assertEqual(Upstream.arrived, [])
        self.assertEqual(self.req("PUT", "/b/k", b"y")[0], 200)  # next one goes through

    def test_reset_after_apply_applies_but_answers_nothing(self):
        self.rule(method="PUT", nth=1, action="reset_after_apply")
        with self.assertRaises((ConnectionError, http.client.HTTPException, OSError)):
            self.req("PUT", "/b/k", b"applied")
        self.assertEqual(Upstream.objects.get("/b/k"), b"applied")

    def test_reset_mid_answer_sends_the_head_and_some_bytes(self):
        self.req("PUT", "/b/k", b"z" * 10000)
        self.rule(method="GET", action="reset_mid_answer", answer_bytes=100)
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
        c.request("GET", "/b/k")
        r = c.getresponse()
        self.assertEqual(r.status, 200)
        with self.assertRaises((http.client.IncompleteRead, ConnectionError, OSError)):
            r.read()
        c.close()

    def test_stall_holds_the_request(self):
        self.rule(method="GET", action="stall", seconds=1)
        t0 = time.monotonic()
        self.assertEqual(self.req("GET", "/b/none")[0], 404)
        self.assertGreaterEqual(time.monotonic() - t0, 0.9)

    def test_skewed_names_the_server_time(self):
        self.rule(action="skewed", skew_seconds=1800)
        st, _, data = self.req("GET", "/b/k", headers={"x-amz-date": "20261123T100000Z"})
        self.assertEqual(st, 403)
        root = ET.fromstring(data)
        self.assertEqual(root.findtext("Code"), "RequestTimeTooSkewed")
        self.assertEqual(root.findtext("RequestTime"), "20261123T100000Z")
        self.assertEqual(root.findtext("MaxAllowedSkewMilliseconds"), "900000")
        server = datetime.datetime.strptime(root.findtext("ServerTime"), "%Y-%m-%dT%H:%M:%SZ")
        server = server.replace(tzinfo=datetime.timezone.utc).timestamp()
        self.assertLess(abs(server - (time.time() + 1800)), 5)

    def test_wrong_region_as_301_and_as_400(self):
        self.rule(action="wrong_region", region="eu-central-1", nth=1)
        st, hs, data = self.req("GET", "/bkt/k")
        self.assertEqual(st, 301)
        self.assertEqual(hs["x-amz-bucket-region"], "eu-central-1")
        root = ET.fromstring(data)
        self.assertEqual(root.findtext("Code"), "PermanentRedirect")
        self.assertEqual(root.findtext("Endpoint"), "bkt.s3.eu-central-1.amazonaws.com")
        self.rule(action="wrong_region", region="ap-south-1", status=400, nth=1)
        st, hs, data = self.req("GET", "/bkt/k")
        self.assertEqual(st, 400)
        root = ET.fromstring(data)
        self.assertEqual(root.findtext("Code"), "AuthorizationHeaderMalformed")
        self.assertEqual(root.findtext("Region"), "ap-south-1")
        self.assertIn("ap-south-1", root.findtext("Message"))

    def test_log_records_each_request_and_its_fate(self):
        self.rule(method="PUT", nth=1, action="error")
        self.req("PUT", "/b/k?partNumber=1", b"x", headers={"x-amz-date": "20261123T100000Z"})
        self.req("PUT", "/b/k", b"x")
        log = self.control("GET", "/log")[1]
        self.assertEqual([(e["method"], e["path"], e["query"], e["action"]) for e in log],
                         [("PUT", "/b/k", "partNumber=1", "error"),
                          ("PUT", "/b/k", "", "forward")])
        self.assertEqual(log[0]["x-amz-date"], "20261123T100000Z")

    def test_conditional_writes_are_enforced_as_s3_does(self):
        self.assertEqual(self.req("PUT", "/b/k", b"v1", headers={"If-None-Match": "*"})[0], 200)
        st, _, data = self.req("PUT", "/b/k", b"v2", headers={"If-None-Match": "*"})
        self.assertEqual(st, 412)
        self.assertEqual(ET.fromstring(data).findtext("Code"), "PreconditionFailed")
        self.assertEqual(Upstream.objects["/b/k"], b"v1")
        # the proxy asked with a HEAD signed for the upstream
        self.assertIn(("HEAD", "/b/k"), Upstream.arrived)
        self.assertTrue(Upstream.auth[-1].startswith(
            "AWS4-HMAC-SHA256 Credential=AKID/"), Upstream.auth[-1])
        self.assertIn("/us-east-1/s3/aws4_request", Upstream.auth[-1])
        etag = '"%s"' % hashlib.md5(b"v1").hexdigest()
        self.assertEqual(self.req("PUT", "/b/k", b"v3", headers={"If-Match": '"other"'})[0], 412)
        self.assertEqual(self.req("PUT", "/b/k", b"v3", headers={"If-Match": etag})[0], 200)
        self.assertEqual(Upstream.objects["/b/k"], b"v3")
        self.assertEqual(self.req("PUT", "/b/new", b"x", headers={"If-Match": etag})[0], 412)
        # parts carry no preconditions
        self.assertEqual(self.req("PUT", "/b/k?partNumber=1&uploadId=u", b"p",
                                  headers={"If-None-Match": "*"})[0], 200)

    def test_a_bad_rule_is_refused(self):
        st, data = self.control("POST", "/rules", {"action": "explode"})
        self.assertEqual(st, 400)
        self.assertIn("action", data["error"])


class MaxSkewTest(unittest.TestCase):
    """--max-skew: requests signed too far from the proxy's clock are refused as S3 (and
    Azure) do."""

    def test_refuses_a_request_signed_20_minutes_off_and_forwards_one_on_time(self):
        up = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
        up.daemon_threads = True
        threading.Thread(target=up.serve_forever, daemon=True).start()
        proc = subprocess.Popen([sys.executable, PROXY, "--upstream",
                                 "127.0.0.1:%d" % up.server_address[1], "--max-skew", "900"],
                                stdout=subprocess.PIPE, text=True)
        try:
            port = None
            for line in proc.stdout:
                k, v = line.split()
                if k == "ready":
                    port = int(v)
                    break
            now = datetime.datetime.now(datetime.timezone.utc)
            for offset, want in ((1200, 403), (-1200, 403), (5, 404)):
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                date = (now + datetime.timedelta(seconds=offset)).strftime("%Y%m%dT%H%M%SZ")
                c.request("GET", "/b/nothing-here", headers={"x-amz-date": date})
                r = c.getresponse()
                data = r.read()
                c.close()
                self.assertEqual(r.status, want, (offset, data))
                if want == 403:
                    self.assertEqual(ET.fromstring(data).findtext("Code"),
                                     "RequestTimeTooSkewed")
            # Azure: x-ms-date, refused in Azure's form.
            for offset, want, detail in ((-1200, 403, "too old"), (1200, 403, "is in the future"),
                                         (5, 404, None)):
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
                date = (now + datetime.timedelta(seconds=offset)).strftime(
                    "%a, %d %b %Y %H:%M:%S GMT")
                c.request("GET", "/devstoreaccount1/c/b",
                          headers={"x-ms-date": date, "x-ms-version": "2021-08-06"})
                r = c.getresponse()
                data = r.read()
                c.close()
                self.assertEqual(r.status, want, (offset, data))
                if want == 403:
                    self.assertEqual(r.getheader("x-ms-error-code"), "AuthenticationFailed")
                    self.assertTrue(r.getheader("Date"))
                    root = ET.fromstring(data[3:])
                    self.assertEqual(root.findtext("Code"), "AuthenticationFailed")
                    self.assertEqual(root.findtext("AuthenticationErrorDetail"),
                                     "Request date header %s: '%s'" % (detail, date))
        finally:
            proc.terminate()
            proc.wait(5)
            proc.stdout.close()
            up.shutdown()
            up.server_close()


if __name__ == "__main__":
    unittest.main()
