#!/usr/bin/python3
"""Self-test of tests/gcs/server.py, the GCS XML API test server in front of s3rver.

It installs (once) and starts @20minutes/s3rver 5.0.0 (tests/s3/install-s3rver.sh,
tests/s3/s3rver.js), generates a service-account key, and starts two proxies:
  A  --key-file <service-account JSON> --accept-token gcp-token
  B  --key-file <public key PEM> --token-lifetime 1 --allow-hmac
then checks the OAuth2 token exchange, Bearer enforcement, forwarding to s3rver, generations
and x-goog-if-generation-match, multipart uploads, multi-object delete (501) and /_test/state.

run: /usr/bin/python3 tests/gcs/test_server.py [-v]      (about 10 s)
Needs node + npm (for s3rver), python3-botocore, python3-cryptography and python3-jwt.
"""

import hashlib
import http.client
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.parse
import urllib.request

import jwt   # python3-jwt (PyJWT)
from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
SERVER = os.path.join(HERE, "server.py")
BUCKET = "ckpt"
EMAIL = "resume-run@resume-run.iam.gserviceaccount.com"
KID = "0123456789abcdef0123456789abcdef01234567"
RW_SCOPE = "https://www.googleapis.com/auth/devstorage.read_write"
RO_SCOPE = "https://www.googleapis.com/auth/devstorage.read_only"

ENV = {}   # filled by setUpModule


# ---------------------------------------------------------------------------------------------
# processes
# ---------------------------------------------------------------------------------------------

class Proc:
    """A child that prints "ready PORT" on stdout; its stderr goes to a log file."""

    def __init__(self, name, argv, tmp):
        self.name = name
        self.log_path = os.path.join(tmp, name + ".log")
        self.log = open(self.log_path, "w+")
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=self.log, text=True)
        line = ""
        deadline = time.time() + 30
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line or line.startswith("ready "):
                break
        if not line.startswith("ready "):
            raise RuntimeError("%s did not start: %r\n%s" % (name, line, self.tail()))
        self.port = int(line.split()[1])
        # Keep draining stdout so the child never blocks on a full pipe.
        threading.Thread(target=self.proc.stdout.read, daemon=True).start()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def tail(self, n=40):
        with open(self.log_path) as f:
            return "".join(f.readlines()[-n:])


def setUpModule():
    tmp = tempfile.mkdtemp(prefix="gcs-test-")
    ENV["tmp"] = tmp
    subprocess.run([os.path.join(SRC, "tests", "s3", "install-s3rver.sh")], check=True)
    ENV["s3"] = Proc("s3rver", ["node", "--openssl-legacy-provider",
                                os.path.join(SRC, "tests", "s3", "s3rver.js"), "0",
                                os.path.join(tmp, "s3data"), BUCKET], tmp)
    s3url = "http://127.0.0.1:%d" % ENV["s3"].port

    # The service account's key, as `gcloud iam service-accounts keys create` writes it.
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                            serialization.NoEncryption()).decode()
    ENV["pem"] = pem
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ENV["other_pem"] = other.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()).decode()
    pub_path = os.path.join(tmp, "sa-public.pem")
    with open(pub_path, "wb") as f:
        f.write(key.public_key().public_bytes(serialization.Encoding.PEM,
                                              serialization.PublicFormat.SubjectPublicKeyInfo))
    sa_path = os.path.join(tmp, "sa.json")
    sa = {"type": "service_account", "project_id": "resume-run", "private_key_id": KID,
          "private_key": pem, "client_email": EMAIL, "client_id": "1234567890",
          "token_uri": "http://127.0.0.1:0/token"}   # the port is filled in below
    with open(sa_path, "w") as f:
        json.dump(sa, f)

    ENV["a"] = Proc("proxy-a", [sys.executable, SERVER, "--port", "0", "--s3", s3url,
                                "--bucket", BUCKET, "--key-file", sa_path,
                                "--accept-token", "gcp-token"], tmp)
    ENV["b"] = Proc("proxy-b", [sys.executable, SERVER, "--port", "0", "--s3", s3url,
                                "--bucket", BUCKET, "--key-file", pub_path,
                                "--token-lifetime", "1", "--allow-hmac"], tmp)
    # What a client reads from the key file: token_uri points at proxy A.
    sa["token_uri"] = "http://127.0.0.1:%d/token" % ENV["a"].port
    with open(sa_path, "w") as f:
        json.dump(sa, f)
    ENV["sa"] = sa


def tearDownModule():
    ENV["tails"] = []
    for name in ("a", "b", "s3"):
        if name in ENV:
            ENV[name].stop()
            ENV["tails"].append("--- %s log (tail) ---\n%s" % (ENV[name].name,
                                                              ENV[name].tail()))
    if "tmp" in ENV:
        shutil.rmtree(ENV["tmp"], ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# clients
# ---------------------------------------------------------------------------------------------

def request(port, method, path, headers=None, body=None, timeout=30):
    """One request on a fresh connection: (status, headers lower-cased, body bytes)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request(method, path, body=body, headers=headers or {})
        r = c.getresponse()
        data = r.read()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data
    finally:
        c.close()


def token_url(port):
    return "http://127.0.0.1:%d/token" % port


def make_jwt(port, key_pem=None, iss=EMAIL, scope=RW_SCOPE, aud=None, iat=None, exp=None,
             kid=KID, alg="RS256", drop=()):
    """The assertion a service-account client signs (Google's JWT-bearer flow)."""
    now = int(time.time())
    iat = now if iat is None else iat
    claims = {"iss": iss, "scope": scope, "aud": aud or token_url(port), "iat": iat,
              "exp": iat + 3600 if exp is None else exp}
    for k in drop:
        claims.pop(k)
    headers = {"kid": kid} if kid else None
    return jwt.encode(claims, key_pem or ENV["pem"], algorithm=alg, headers=headers)


def exchange(port, assertion, grant=None):
    """POST /token with the form body: (status, JSON)."""
    form = urllib.parse.urlencode({
        "grant_type": grant or "urn:ietf:params:oauth:grant-type:jwt-bearer",
        "assertion": assertion})
    st, _, body = request(port, "POST", "/token", {
        "Content-Type": "application/x-www-form-urlencoded"}, form)
    return st, json.loads(body)


def get_token(port, scope=RW_SCOPE):
    st, js = exchange(port, make_jwt(port, scope=scope))
    assert st == 200, (st, js)
    return js["access_token"]


_TOKEN = {}


def bearer(port=None):
    port = port or ENV["a"].port
    if port not in _TOKEN:
        _TOKEN[port] = get_token(port)
    return {"Authorization": "Bearer " + _TOKEN[port]}


def gcs(method, key, body=None, headers=None, port=None, query=""):
    """A Bearer request to proxy A (or port) for object key ("" for the bucket)."""
    port = port or ENV["a"].port
    h = dict(bearer(port))
    h.update(headers or {})
    path = "/%s/%s" % (BUCKET, urllib.parse.quote(key)) if key else "/" + BUCKET
    return request(port, method, path + ("?" + query if query else ""), h, body)


def signed(method, host_port, path, body=b"", headers=None):
    """A SigV4-signed request (S3RVER/S3RVER) to 127.0.0.1:host_port: (status, headers, body).
    Used to look into s3rver directly, and to talk HMAC to proxy B."""
    netloc = "127.0.0.1:%d" % host_port
    req = AWSRequest(method=method, url="http://%s%s" % (netloc, path), data=body,
                     headers=dict(headers or {}))
    req.headers["Host"] = netloc
    S3SigV4Auth(Credentials("S3RVER", "S3RVER"), "s3", "us-east-1").add_auth(req)
    return request(host_port, method, path, dict(req.headers.items()), body)


def s3_get(key):
    return signed("GET", ENV["s3"].port, "/%s/%s" % (BUCKET, urllib.parse.quote(key)))


def state(port=None):
    with urllib.request.urlopen("http://127.0.0.1:%d/_test/state"
                                % (port or ENV["a"].port)) as r:
        return json.loads(r.read())


def gen_of(headers):
    return int(headers["x-goog-generation"])


def error_code(body):
    m = re.search(rb"<Code>([^<]*)</Code>", body)
    return m.group(1).decode() if m else None


# ---------------------------------------------------------------------------------------------
# the tests
# ---------------------------------------------------------------------------------------------

class TokenEndpoint(unittest.TestCase):
    def test_good_assertion_gets_a_bearer_token(self):
        port = ENV["a"].port
        self.assertEqual(ENV["sa"]["token_uri"], token_url(port))
        st, js = exchange(port, make_jwt(port))
        self.assertEqual(st, 200, js)
        self.assertEqual(js["token_type"], "Bearer")
        self.assertEqual(js["expires_in"], 3600)
        self.assertTrue(js["access_token"])
        # and it works on a data request
        st, _, _ = request(port, "GET", "/%s?list-type=2" % BUCKET,
                           {"Authorization": "Bearer " + js["access_token"]})
        self.assertEqual(st, 200)

    def test_bad_assertions_are_invalid_grant(self):
        port = ENV["a"].port
        now = int(time.time())
        cases = {
            "signed by another key": make_jwt(port, key_pem=ENV["other_pem"]),
            "tampered claims": (lambda j: j.split(".")[0] + "." +
                                make_jwt(port, scope=RW_SCOPE + " x").split(".")[1] + "." +
                                j.split(".")[2])(make_jwt(port)),
            "wrong audience": make_jwt(port, aud="https://oauth2.googleapis.com/token"),
            "expired": make_jwt(port, iat=now - 4000, exp=now - 400),
            "longer than an hour": make_jwt(port, iat=now, exp=now + 3700),
            "iat far in the future": make_jwt(port, iat=now + 1000, exp=now + 1100),
            "no scope": make_jwt(port, drop=("scope",)),
            "no iss": make_jwt(port, drop=("iss",)),
            "no exp": make_jwt(port, drop=("exp",)),
            "another issuer": make_jwt(port, iss="someone@else.iam.gserviceaccount.com"),
            "another kid": make_jwt(port, kid="ffff"),
            "HS256": make_jwt(port, key_pem="shared-secret-" * 3, alg="HS256"),
            "alg none": jwt.encode({"iss": EMAIL, "scope": RW_SCOPE, "aud": token_url(port),
                                    "iat": now, "exp": now + 60}, None, algorithm="none"),
            "two parts": "abc.def",
            "not base64": "a!b.c$d.e%f",
        }
        for what, assertion in cases.items():
            with self.subTest(what):
                st, js = exchange(port, assertion)
                self.assertEqual(st, 400, js)
                self.assertEqual(js["error"], "invalid_grant", js)
                self.assertTrue(js["error_description"])
        self.assertIn("Invalid JWT Signature", exchange(port, cases["signed by another key"])[1]
                      ["error_description"])

    def test_other_token_request_errors(self):
        port = ENV["a"].port
        st, js = exchange(port, make_jwt(port), grant="client_credentials")
        self.assertEqual((st, js["error"]), (400, "unsupported_grant_type"))
        st, _, body = request(port, "POST", "/token", {"Content-Type": "application/json"},
                              b"{}")
        self.assertEqual((st, json.loads(body)["error"]), (400, "invalid_request"))
        st, _, _ = request(port, "GET", "/token")
        self.assertEqual(st, 405)

    def test_public_pem_key_and_audience_per_server(self):
        b = ENV["b"].port
        st, js = exchange(b, make_jwt(b))           # B verifies with the public PEM
        self.assertEqual(st, 200, js)
        self.assertEqual(js["expires_in"], 1)
        st, js = exchange(b, make_jwt(ENV["a"].port))   # aud is A's token URL
        self.assertEqual((st, js["error"]), (400, "invalid_grant"))


class Authentication(unittest.TestCase):
    def test_requests_without_a_valid_bearer_token_get_401(self):
        port = ENV["a"].port
        before = state()["sent_401"]
        for headers in ({}, {"Authorization": "Bearer not-a-token"},
                        {"Authorization": "bearer"},
                        {"Authorization": "AWS4-HMAC-SHA256 Credential=S3RVER/x, "
                                          "SignedHeaders=host, Signature=00"}):
            with self.subTest(headers=headers):
                for method in ("GET", "PUT", "HEAD"):
                    st, h, body = request(port, method, "/%s/auth-probe" % BUCKET, headers,
                                          b"x" if method == "PUT" else None)
                    self.assertEqual(st, 401)
                    if method != "HEAD":
                        self.assertEqual(error_code(body), "AuthenticationRequired")
                    self.assertIn("bearer", h.get("www-authenticate", "").lower())
        self.assertEqual(s3_get("auth-probe")[0], 404)   # nothing was written
        self.assertEqual(state()["sent_401"], before + 12)
        schemes = state()["auth_schemes"]
        for s in ("Bearer", "(none)", "AWS4-HMAC-SHA256"):
            self.assertIn(s, schemes)

    def test_accept_token(self):
        st, _, _ = request(ENV["a"].port, "GET", "/%s?list-type=2" % BUCKET,
                           {"Authorization": "Bearer gcp-token"})
        self.assertEqual(st, 200)
        st, _, _ = request(ENV["b"].port, "GET", "/%s?list-type=2" % BUCKET,
                           {"Authorization": "Bearer gcp-token"})
        self.assertEqual(st, 401)     # B has no --accept-token

    def test_tokens_expire(self):
        b = ENV["b"].port             # --token-lifetime 1
        tok = {"Authorization": "Bearer " + get_token(b)}
        self.assertEqual(request(b, "GET", "/%s?list-type=2" % BUCKET, tok)[0], 200)
        time.sleep(1.3)
        st, _, body = request(b, "GET", "/%s?list-type=2" % BUCKET, tok)
        self.assertEqual(st, 401)
        self.assertEqual(error_code(body), "AuthenticationRequired")

    def test_expire_tokens_control(self):
        b = ENV["b"].port
        tok = {"Authorization": "Bearer " + get_token(b)}
        st, _, body = request(b, "POST", "/_test/expire-tokens")
        self.assertEqual(st, 200)
        self.assertGreaterEqual(json.loads(body)["expired"], 1)
        self.assertEqual(request(b, "GET", "/%s?list-type=2" % BUCKET, tok)[0], 401)

    def test_scopes(self):
        port = ENV["a"].port
        ro = {"Authorization": "Bearer " + get_token(port, scope=RO_SCOPE)}
        self.assertEqual(gcs("PUT", "scoped", b"1")[0], 200)
        self.assertEqual(request(port, "GET", "/%s/scoped" % BUCKET, ro)[0], 200)
        st, _, body = request(port, "PUT", "/%s/scoped" % BUCKET, ro, b"2")
        self.assertEqual((st, error_code(body)), (403, "AccessDenied"))
        self.assertEqual(s3_get("scoped")[2], b"1")

    def test_hmac_forwarding(self):
        b, a = ENV["b"].port, ENV["a"].port
        # Signed for proxy B's host: B forwards it unchanged and s3rver checks the signature.
        st, h, _ = signed("PUT", b, "/%s/hmac-object" % BUCKET, b"via hmac")
        self.assertEqual(st, 200)
        self.assertIn("x-goog-generation", h)
        self.assertEqual(s3_get("hmac-object")[2], b"via hmac")
        st, _, body = signed("GET", b, "/%s/hmac-object" % BUCKET)
        self.assertEqual((st, body), (200, b"via hmac"))
        # A bad signature is s3rver's to refuse.
        st, _, _ = request(b, "GET", "/%s/hmac-object" % BUCKET, {
            "Authorization": "AWS4-HMAC-SHA256 Credential=S3RVER/20200101/us-east-1/s3/"
                             "aws4_request, SignedHeaders=host, Signature=" + "0" * 64,
            "x-amz-content-sha256": "UNSIGNED-PAYLOAD", "x-amz-date": "20200101T000000Z"})
        self.assertEqual(st, 403)
        # Proxy A has no --allow-hmac.
        self.assertEqual(signed("GET", a, "/%s/hmac-object" % BUCKET)[0], 401)


class Objects(unittest.TestCase):
    def test_put_get_head_list_delete(self):
        key = "run-1/step-00000100/model 1+(a).safetensors"
        data = os.urandom(100000)
        st, h, _ = gcs("PUT", key, data, {"Content-Type": "application/octet-stream",
                                          "x-goog-meta-step": "100"})
        self.assertEqual(st, 200)
        self.assertEqual(h["etag"], '"%s"' % hashlib.md5(data).hexdigest())
        gen = gen_of(h)
        self.assertEqual(h["x-goog-metageneration"], "1")
        self.assertEqual(s3_get(key)[2], data)                   # it is in s3rver

        st, h, body = gcs("GET", key)
        self.assertEqual((st, body), (200, data))
        self.assertEqual(gen_of(h), gen)
        self.assertEqual(h["x-goog-meta-step"], "100")
        self.assertEqual(h["content-type"], "application/octet-stream")
        self.assertNotIn("x-amz-request-id", h)

        st, h, body = gcs("GET", key, headers={"Range": "bytes=10-19"})
        self.assertEqual((st, body), (206, data[10:20]))
        self.assertEqual(h["content-range"], "bytes 10-19/100000")
        self.assertEqual(gen_of(h), gen)

        st, h, body = gcs("HEAD", key)
        self.assertEqual((st, body, h["content-length"]), (200, b"", "100000"))
        self.assertEqual(gen_of(h), gen)

        st, _, body = gcs("GET", "", query="list-type=2&prefix=" +
                          urllib.parse.quote("run-1/", safe=""))
        self.assertEqual(st, 200)
        self.assertIn(b"<Key>run-1/step-00000100/model 1+(a).safetensors</Key>", body)

        st, _, _ = gcs("DELETE", key)
        self.assertEqual(st, 204)
        self.assertEqual(s3_get(key)[0], 404)                    # gone from s3rver
        self.assertNotIn(key, state()["generations"])
        st, _, body = gcs("DELETE", key)                         # GCS: 404, not S3's 204
        self.assertEqual((st, error_code(body)), (404, "NoSuchKey"))
        self.assertEqual(gcs("GET", key)[0], 404)
        self.assertEqual(gcs("HEAD", key)[0], 404)

    def test_other_bucket(self):
        st, _, body = request(ENV["a"].port, "GET", "/elsewhere/x", bearer())
        self.assertEqual((st, error_code(body)), (404, "NoSuchBucket"))

    def test_keep_alive(self):
        c = http.client.HTTPConnection("127.0.0.1", ENV["a"].port, timeout=10)
        try:
            for i in range(5):
                c.request("PUT", "/%s/keepalive" % BUCKET, body=b"%d" % i, headers=bearer())
                r = c.getresponse()
                r.read()
                self.assertEqual(r.status, 200)
                c.request("GET", "/%s/keepalive" % BUCKET, headers=bearer())
                r = c.getresponse()
                self.assertEqual(r.read(), b"%d" % i)
            c.request("GET", "/%s/nothing-here" % BUCKET, headers={})   # 401 keeps it too
            r = c.getresponse()
            r.read()
            self.assertEqual(r.status, 401)
            c.request("HEAD", "/%s/keepalive" % BUCKET, headers=bearer())
            r = c.getresponse()
            r.read()
            self.assertEqual(r.status, 200)
        finally:
            c.close()

    def test_expect_100_continue(self):
        """libcurl's Expect: 100-continue: a bad token is refused before the body is sent."""
        def head_of(sock):
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                data += chunk
            return data

        request_head = ("PUT /%s/expect HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n"
                        "Expect: 100-continue\r\n%s\r\n")
        with socket.create_connection(("127.0.0.1", ENV["a"].port), timeout=10) as sock:
            sock.sendall((request_head % (BUCKET, "Authorization: Bearer wrong\r\n")).encode())
            self.assertTrue(head_of(sock).startswith(b"HTTP/1.1 401 "))
        with socket.create_connection(("127.0.0.1", ENV["a"].port), timeout=10) as sock:
            auth = "Authorization: %s\r\n" % bearer()["Authorization"]
            sock.sendall((request_head % (BUCKET, auth)).encode())
            self.assertTrue(head_of(sock).startswith(b"HTTP/1.1 100 Continue"))
            sock.sendall(b"hello")
            self.assertTrue(head_of(sock).startswith(b"HTTP/1.1 200 "))
        self.assertEqual(s3_get("expect")[2], b"hello")

    def test_multi_object_delete_is_not_implemented(self):
        gcs("PUT", "md/1", b"1")
        body = (b'<?xml version="1.0" encoding="UTF-8"?><Delete><Object><Key>md/1</Key>'
                b"</Object></Delete>")
        st, _, resp = gcs("POST", "", body, query="delete",
                          headers={"Content-MD5": "x", "Content-Type": "application/xml"})
        self.assertEqual((st, error_code(resp)), (501, "NotImplemented"))
        self.assertEqual(s3_get("md/1")[2], b"1")

    def test_chunked_upload(self):
        c = http.client.HTTPConnection("127.0.0.1", ENV["a"].port, timeout=10)
        try:
            c.request("PUT", "/%s/chunked" % BUCKET, body=iter([b"abc", b"def"]),
                      headers=bearer(), encode_chunked=True)
            r = c.getresponse()
            r.read()
            self.assertEqual(r.status, 200)
        finally:
            c.close()
        self.assertEqual(s3_get("chunked")[2], b"abcdef")


class Generations(unittest.TestCase):
    def test_generations_increase(self):
        g = []
        for i in range(3):
            st, h, _ = gcs("PUT", "gens", b"v%d" % i)
            self.assertEqual(st, 200)
            g.append(gen_of(h))
        self.assertTrue(g[0] < g[1] < g[2], g)
        self.assertGreater(g[0], 1_600_000_000_000_000)         # microseconds, as on GCS
        self.assertEqual(gen_of(gcs("GET", "gens")[1]), g[2])
        self.assertEqual(gen_of(gcs("HEAD", "gens")[1]), g[2])
        self.assertEqual(state()["generations"]["gens"], g[2])

    def test_create_only(self):
        key = "create-only"
        st, h, _ = gcs("PUT", key, b"first", {"x-goog-if-generation-match": "0"})
        self.assertEqual(st, 200)
        gen = gen_of(h)
        before = state()["sent_412"]
        st, _, body = gcs("PUT", key, b"second", {"x-goog-if-generation-match": "0"})
        self.assertEqual((st, error_code(body)), (412, "PreconditionFailed"))
        self.assertEqual(s3_get(key)[2], b"first")               # nothing written
        st, h, body = gcs("GET", key)
        self.assertEqual((body, gen_of(h)), (b"first", gen))
        self.assertEqual(state()["sent_412"], before + 1)

    def test_compare_and_swap(self):
        key = "cas"
        g1 = gen_of(gcs("PUT", key, b"one")[1])
        st, h, _ = gcs("PUT", key, b"two", {"x-goog-if-generation-match": str(g1)})
        self.assertEqual(st, 200)
        g2 = gen_of(h)
        self.assertGreater(g2, g1)
        st, _, _ = gcs("PUT", key, b"three", {"x-goog-if-generation-match": str(g1)})
        self.assertEqual(st, 412)                                # stale generation
        self.assertEqual(s3_get(key)[2], b"two")
        # reads
        st, h, body = gcs("GET", key, headers={"x-goog-if-generation-match": str(g2)})
        self.assertEqual((st, body, gen_of(h)), (200, b"two", g2))
        self.assertEqual(gcs("GET", key, headers={"x-goog-if-generation-match": str(g1)})[0],
                         412)
        self.assertEqual(gcs("HEAD", key, headers={"x-goog-if-generation-match": str(g1)})[0],
                         412)
        self.assertEqual(gcs("HEAD", key, headers={"x-goog-if-generation-match": "0"})[0], 412)
        self.assertEqual(gcs("HEAD", key, headers={"x-goog-if-metageneration-match": "1"})[0],
                         200)
        self.assertEqual(gcs("HEAD", key, headers={"x-goog-if-metageneration-match": "2"})[0],
                         412)
        # an absent object fails a non-zero generation match, as on GCS
        self.assertEqual(gcs("PUT", "cas-absent", b"x",
                             {"x-goog-if-generation-match": str(g2)})[0], 412)
        self.assertEqual(s3_get("cas-absent")[0], 404)
        self.assertEqual(gcs("GET", "cas-absent",
                             headers={"x-goog-if-generation-match": str(g2)})[0], 412)
        # 0 holds for an absent object; the read then finds nothing
        self.assertEqual(gcs("GET", "cas-absent",
                             headers={"x-goog-if-generation-match": "0"})[0], 404)
        # not a number
        st, _, body = gcs("PUT", key, b"x", {"x-goog-if-generation-match": "abc"})
        self.assertEqual((st, error_code(body)), (400, "InvalidArgument"))
        # conditional delete
        self.assertEqual(gcs("DELETE", key, headers={"x-goog-if-generation-match": str(g1)})[0],
                         412)
        self.assertEqual(gcs("DELETE", key, headers={"x-goog-if-generation-match": str(g2)})[0],
                         204)
        # deleted: the generation is forgotten, create-only works again
        self.assertEqual(gcs("PUT", key, b"again", {"x-goog-if-generation-match": "0"})[0], 200)

    def test_racing_create_only_puts(self):
        key = "race-%d" % time.time_ns()
        results = []
        barrier = threading.Barrier(8)

        def worker(i):
            barrier.wait()
            st, _, _ = gcs("PUT", key, b"writer %d" % i, {"x-goog-if-generation-match": "0"})
            results.append((st, i))

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        winners = [i for st, i in results if st == 200]
        self.assertEqual(len(winners), 1, results)
        self.assertEqual(sorted(st for st, _ in results), [200] + [412] * 7)
        self.assertEqual(s3_get(key)[2], b"writer %d" % winners[0])

    def test_objects_written_behind_the_proxy(self):
        key = "direct-%d" % time.time_ns()
        path = "/%s/%s" % (BUCKET, key)
        self.assertEqual(signed("PUT", ENV["s3"].port, path, b"direct")[0], 200)
        # first sight through a precondition check (HEAD on s3rver)
        self.assertEqual(gcs("PUT", key, b"x", {"x-goog-if-generation-match": "0"})[0], 412)
        self.assertEqual(s3_get(key)[2], b"direct")
        g1 = state()["generations"][key]
        st, h, body = gcs("GET", key)
        self.assertEqual((st, body, gen_of(h)), (200, b"direct", g1))
        # rewritten behind the proxy's back: a new generation on next sight
        self.assertEqual(signed("PUT", ENV["s3"].port, path, b"changed")[0], 200)
        st, h, body = gcs("GET", key)
        self.assertEqual(body, b"changed")
        self.assertGreater(gen_of(h), g1)
        # deleted behind its back: a create-only PUT succeeds
        self.assertEqual(signed("DELETE", ENV["s3"].port, path)[0], 204)
        self.assertEqual(gcs("PUT", key, b"new", {"x-goog-if-generation-match": "0"})[0], 200)

    def test_first_sight_by_plain_get(self):
        key = "direct-get-%d" % time.time_ns()
        self.assertEqual(signed("PUT", ENV["s3"].port, "/%s/%s" % (BUCKET, key), b"d")[0], 200)
        st, h, _ = gcs("HEAD", key)
        self.assertEqual(st, 200)
        self.assertEqual(gen_of(h), state()["generations"][key])


class Multipart(unittest.TestCase):
    def upload(self, key, parts, headers=None):
        st, _, body = gcs("POST", key, b"", headers, query="uploads")
        self.assertEqual(st, 200, body)
        upload_id = re.search(rb"<UploadId>([^<]+)</UploadId>", body).group(1).decode()
        etags = []
        for n, data in enumerate(parts, 1):
            st, h, _ = gcs("PUT", key, data, query="partNumber=%d&uploadId=%s" % (
                n, urllib.parse.quote(upload_id, safe="")))
            self.assertEqual(st, 200)
            etags.append(h["etag"])
        xml = "<CompleteMultipartUpload>%s</CompleteMultipartUpload>" % "".join(
            "<Part><PartNumber>%d</PartNumber><ETag>%s</ETag></Part>" % (n, e)
            for n, e in enumerate(etags, 1))
        return gcs("POST", key, xml.encode(), {"Content-Type": "application/xml"},
                   query="uploadId=" + urllib.parse.quote(upload_id, safe=""))

    def test_multipart_upload_sets_a_generation(self):
        key = "mpu/model.safetensors"
        g0 = gen_of(gcs("PUT", key, b"old")[1])
        parts = [os.urandom(5 << 20), os.urandom(1000)]
        st, h, body = self.upload(key, parts)
        self.assertEqual(st, 200, body)
        self.assertIn(b"CompleteMultipartUploadResult", body)
        g1 = gen_of(h)
        self.assertGreater(g1, g0)
        st, h, got = gcs("GET", key)
        self.assertEqual(got, b"".join(parts))
        self.assertEqual(gen_of(h), g1)
        self.assertEqual(s3_get(key)[2], b"".join(parts))
        # the result is an object like any other: CAS against its generation works
        self.assertEqual(gcs("PUT", key, b"x", {"x-goog-if-generation-match": str(g0)})[0], 412)

    def test_preconditions_are_refused_in_multipart_requests(self):
        for query, method in (("uploads", "POST"), ("partNumber=1&uploadId=abc", "PUT"),
                              ("uploadId=abc", "POST")):
            with self.subTest(query=query):
                st, _, body = gcs(method, "mpu/cond", b"", {"x-goog-if-generation-match": "0"},
                                  query=query)
                self.assertEqual((st, error_code(body)), (400, "InvalidArgument"))


class State(unittest.TestCase):
    def test_state(self):
        s0 = state()
        gcs("PUT", "state-probe", b"1")
        gcs("GET", "state-probe")
        request(ENV["a"].port, "GET", "/%s/state-probe" % BUCKET)
        s1 = state()
        self.assertEqual(s1["requests_by_method"]["PUT"], s0["requests_by_method"]["PUT"] + 1)
        self.assertEqual(s1["requests_by_method"]["GET"], s0["requests_by_method"]["GET"] + 2)
        self.assertEqual(s1["sent_401"], s0["sent_401"] + 1)
        self.assertEqual(s1["unauthorized"], s1["sent_401"])
        self.assertEqual(s1["precondition_failed"], s1["sent_412"])
        self.assertGreaterEqual(s1["tokens_issued"], 1)
        self.assertIn("Bearer", s1["auth_schemes"])
        self.assertEqual(s1["token_url"], token_url(ENV["a"].port))
        # one log line per request
        self.assertRegex(ENV["a"].tail(), r"\S+ GET /%s/state-probe -> 401\n" % BUCKET)


if __name__ == "__main__":
    t0 = time.time()
    prog = unittest.main(exit=False, verbosity=2 if "-v" in sys.argv else 1)
    ok = prog.result.wasSuccessful()
    if not ok:
        sys.stderr.write("\n".join(ENV.get("tails", [])))
    sys.stderr.write("%s in %.1f s\n" % ("OK" if ok else "FAILED", time.time() - t0))
    sys.exit(0 if ok else 1)
