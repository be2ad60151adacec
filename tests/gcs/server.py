#!/usr/bin/python3
"""A Google Cloud Storage XML API test server that stands in front of a running s3rver.

GCS's XML API is "compatible with Amazon S3" for the object calls resume-run makes
(Google's "XML API" and "Authentication" pages for Cloud Storage), so the bytes can live in
@20minutes/s3rver 5.0.0 (tests/s3/s3rver.js). What
this proxy adds is what GCS enforces and s3rver does not:

  * OAuth2: a service-account JWT is exchanged for an access token at POST /token
    (the JWT-bearer grant that Google's token_uri speaks), and every XML API request must carry
    `Authorization: Bearer <token>` (§6: "XML API Authorization may be Bearer <OAuth2 token>").
    Tokens expire.
  * Object generations: every write makes a new generation, reported as x-goog-generation, and
    `x-goog-if-generation-match` makes writes and reads conditional on it; 0 means create-only
    (§6 "Create-only on GCS").
  * What the XML API lacks: multi-object delete (POST ?delete) is not part of it, and
    preconditions are refused in multipart-upload requests (§6 "XML multipart upload":
    "Preconditions are not supported in the requests").

usage: server.py --port PORT --s3 http://127.0.0.1:S3PORT --bucket NAME
                 [--key-file SERVICE_ACCOUNT_JSON_OR_PEM]... [--accept-token TOKEN]...
                 [--token-lifetime SECONDS] [--allow-hmac] [--host 127.0.0.1]
                 [--max-body BYTES] [--token-url https://127.0.0.1:TLSPORT/token]

PORT 0 picks a free port; once listening it prints "ready PORT" (flushed) on stdout. One line
per request goes to stderr: "<time> <method> <path> -> <status>" (never a header value).

--key-file       the key that verifies JWT signatures: a service-account key file (JSON with
                 private_key, client_email, private_key_id; its public half is derived), a public
                 key PEM, an X.509 certificate PEM, or a private key PEM. Repeatable; any of them
                 may verify. Without one, every /token request fails (invalid_grant).
--accept-token   an access token accepted on data requests without being issued here (e.g. the
                 GCE metadata test server's "gcp-token", tests/metadata/server.py). Repeatable.
--token-lifetime expires_in of issued tokens (default 3600, as Google's).
--allow-hmac     also accept requests signed with AWS4-HMAC-SHA256 (header or presigned query)
                 and forward them to s3rver unchanged, so s3rver checks the signature against
                 S3RVER/S3RVER (§6: GCS HMAC keys + V4 signing). Without it: Bearer only.

Test control API (no auth, JSON):
  GET  /_test/state          counters: requests by method, statuses, 401s and 412s sent, tokens
                             issued, Authorization schemes seen, current generations, ...
  POST /_test/expire-tokens  every token issued so far stops working (as if revoked), so a
                             client's refresh-on-401 path can be exercised.

Where each rule comes from. From Google's "XML API" and "Authentication" pages for Cloud Storage:
Bearer tokens on the XML
API; x-goog-if-generation-match: 0 = create-only; XML multipart upload is S3-compatible, replaces
the object, and refuses preconditions; HMAC + V4 signing as the alternative. Not in §6, modelled
on GCS's documented behaviour and marked "(GCS, not in §6)" where applied: the JWT-bearer token
exchange and its checks (RS256, aud = token_uri, lifetime <= 60 min), a non-zero generation
match failing on an absent object, x-goog-generation on reads and writes, 404 for DELETE of a
missing object, 401 AuthenticationRequired for bad/expired tokens, 403 for a token without a
storage scope, no multi-object delete. Error wordings copy GCS's where known; details are ours.
Not modelled: crc32c in x-goog-hash, versioned buckets (?generation=), resumable uploads, the
reported ExcessHeaderValues refusal of x-goog-* beside x-amz-* (§6: unverified).

Implementation: Python 3.11 standard library + Debian's python3-botocore (SigV4 towards
s3rver) and python3-cryptography (RS256 verification). Run with /usr/bin/python3.
"""

import argparse
import base64
import collections
import http.client
import http.server
import json
import os
import re
import secrets
import signal
import socket
import sys
import threading
import time
import traceback
from urllib.parse import parse_qs, parse_qsl, quote, unquote, urlsplit
from xml.sax.saxutils import escape as xml_escape

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from http_body import read_body  # noqa: E402

S3_ACCESS_KEY = S3_SECRET_KEY = "S3RVER"   # s3rver's built-in account (s3rver's README)
S3_REGION = "us-east-1"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
MAX_JWT_LIFETIME = 3600        # Google: "Token must be a short-lived token (60 minutes)"
IAT_SKEW = 300                 # how far in the future iat may be (clock skew allowance)
BUFFER_LIMIT = 64 << 20        # GET bodies up to this size are buffered, see Proxy.get_object
CHUNK = 1 << 20

# OAuth scopes that allow reading / writing objects. Google checks the token's scopes against the
# call; a token without a storage scope gets 403 ("Provided scope(s) are not authorized").
SCOPE_PREFIX = "https://www.googleapis.com/auth/"
READ_SCOPES = {SCOPE_PREFIX + s for s in (
    "devstorage.read_only", "devstorage.read_write", "devstorage.full_control",
    "cloud-platform", "cloud-platform.read-only")}
WRITE_SCOPES = {SCOPE_PREFIX + s for s in (
    "devstorage.read_write", "devstorage.full_control", "cloud-platform")}

# Request headers copied to s3rver for a Bearer request (everything else is dropped, including any
# x-amz-*: a Bearer request is not an S3 request). x-goog-meta-* become x-amz-meta-*.
FORWARD_HEADERS = ("Content-Type", "Range", "Content-MD5", "Cache-Control", "Content-Disposition",
                   "Content-Encoding", "Content-Language", "Expires")
# Conditional HTTP headers are passed on GET/HEAD only. GCS's write precondition is
# x-goog-if-generation-match (§6); an S3-style If-None-Match: * on PUT must not silently work here.
READ_CONDITIONAL_HEADERS = ("If-Match", "If-None-Match", "If-Modified-Since",
                            "If-Unmodified-Since")
# Response headers relayed from s3rver (x-amz-meta-* come back as x-goog-meta-*).
RELAY_HEADERS = ("ETag", "Content-Range", "Content-Type", "Last-Modified", "Accept-Ranges",
                 "Cache-Control", "Content-Disposition", "Content-Encoding", "Content-Language",
                 "Expires")
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
              "expect", "proxy-connection", "proxy-authorization", "content-length"}


# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------

def log_time():
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + ".%03dZ" % int(now % 1 * 1000)


class Reply:
    """One answer. body: bytes, or (when stream is set) an upstream http.client response whose
    remaining `length` bytes are copied to the client. release() runs once the answer is sent."""

    def __init__(self, status, body=b"", ctype=None, headers=None, stream=None, length=None,
                 release=None):
        self.status = status
        self.body = body.encode() if isinstance(body, str) else body
        self.ctype = ctype
        self.headers = list(headers or [])
        self.stream = stream
        self.length = length
        self.release = release


def gcs_error(status, code, message, details=None, headers=None):
    """GCS-style XML error: <Error><Code>..</Code><Message>..</Message>[<Details>]</Error>."""
    xml = "<?xml version='1.0' encoding='UTF-8'?><Error><Code>%s</Code><Message>%s</Message>" % (
        xml_escape(code), xml_escape(message))
    if details:
        xml += "<Details>%s</Details>" % xml_escape(details)
    xml += "</Error>"
    return Reply(status, xml, "application/xml; charset=UTF-8", headers)


def json_reply(status, obj, headers=None):
    return Reply(status, json.dumps(obj, indent=1), "application/json; charset=utf-8", headers)


def precondition_failed(details):
    # The Message is GCS's own wording for a failed x-goog-if-*-match.
    return gcs_error(412, "PreconditionFailed",
                     "At least one of the pre-conditions you specified did not hold.", details)


def b64url_decode(s):
    """Strict base64url (the JWT alphabet, padding optional). Raises ValueError."""
    if not re.fullmatch(r"[A-Za-z0-9_-]*={0,2}", s):
        raise ValueError("not base64url")
    s = s.rstrip("=")
    return base64.b64decode(s.replace("-", "+").replace("_", "/") + "=" * (-len(s) % 4),
                            validate=True)


class RWLock:
    """Per-object lock: many readers (GET/HEAD) or one writer (PUT, complete, delete); waiting
    writers go first so a stream of range reads cannot starve a write."""

    def __init__(self):
        self._cond = threading.Condition()
        self._readers = 0
        self._writer = False
        self._writers_waiting = 0

    def acquire_read(self):
        with self._cond:
            while self._writer or self._writers_waiting:
                self._cond.wait()
            self._readers += 1

    def release_read(self):
        with self._cond:
            self._readers -= 1
            if self._readers == 0:
                self._cond.notify_all()

    def acquire_write(self):
        with self._cond:
            self._writers_waiting += 1
            while self._writer or self._readers:
                self._cond.wait()
            self._writers_waiting -= 1
            self._writer = True

    def release_write(self):
        with self._cond:
            self._writer = False
            self._cond.notify_all()


# ---------------------------------------------------------------------------------------------
# OAuth2: the JWT-bearer grant (what a service-account key's token_uri does) and the tokens
# ---------------------------------------------------------------------------------------------

class VerifyKey:
    def __init__(self, public_key, client_email=None, key_id=None, source=""):
        self.public_key = public_key
        self.client_email = client_email
        self.key_id = key_id
        self.source = source


def load_key(path):
    """A VerifyKey from a service-account JSON, or a public/private key or certificate PEM."""
    with open(path, "rb") as f:
        data = f.read()
    email = kid = None
    if data.lstrip().startswith(b"{"):
        info = json.loads(data)
        if not isinstance(info, dict) or not isinstance(info.get("private_key"), str):
            raise ValueError("%s: a JSON key file needs a private_key (service-account key)"
                             % path)
        pem = info["private_key"].encode()
        email, kid = info.get("client_email"), info.get("private_key_id")
        public = serialization.load_pem_private_key(pem, password=None).public_key()
    elif b"CERTIFICATE-----" in data:
        public = x509.load_pem_x509_certificate(data).public_key()
    elif b"PRIVATE KEY-----" in data:
        public = serialization.load_pem_private_key(data, password=None).public_key()
    else:
        public = serialization.load_pem_public_key(data)
    if not isinstance(public, rsa.RSAPublicKey):
        raise ValueError("%s: not an RSA key (RS256 needs RSA)" % path)
    return VerifyKey(public, email, kid, path)


class GrantError(Exception):
    """A refused token request: 400 {"error": code, "error_description": description}."""

    def __init__(self, description, code="invalid_grant"):
        super().__init__(description)
        self.code = code
        self.description = description


class Tokens:
    """Issued access tokens: token -> (expiry, scopes, issuer). Locked by the caller (App)."""

    def __init__(self, keys, token_url, lifetime, accepted):
        self.keys = keys
        self.token_url = token_url
        self.lifetime = lifetime
        self.accepted = set(accepted)      # --accept-token values: never expire, all scopes
        self.issued = {}
        self.issued_count = 0

    def verify_jwt(self, assertion, now):
        """The claims of a valid assertion, or GrantError. Google's checks, in its order:
        the signature (by the service account's key), then audience, then the time window."""
        parts = assertion.split(".")
        if len(parts) != 3:
            raise GrantError("Invalid JWT: not three base64url parts separated by dots.")
        try:
            header = json.loads(b64url_decode(parts[0]))
            claims = json.loads(b64url_decode(parts[1]))
            signature = b64url_decode(parts[2])
        except (ValueError, UnicodeDecodeError):
            raise GrantError("Invalid JWT: a part is not base64url-encoded JSON.")
        if not isinstance(header, dict) or not isinstance(claims, dict):
            raise GrantError("Invalid JWT: header and claims must be JSON objects.")
        # Service-account assertions are RS256 only (no "none", no HMAC algorithms).
        if header.get("alg") != "RS256":
            raise GrantError("Invalid JWT: alg must be RS256, not %r." % (header.get("alg"),))
        if not self.keys:
            raise GrantError("Invalid JWT Signature. (the test server has no --key-file)")
        signed = (parts[0] + "." + parts[1]).encode()
        kid = header.get("kid")
        good = False
        for key in self.keys:
            # Google looks the key up by the issuer's account and the header's kid: a key file's
            # private_key_id that differs from kid, or another account's email, cannot verify.
            if kid is not None and key.key_id is not None and kid != key.key_id:
                continue
            if key.client_email is not None and claims.get("iss") != key.client_email:
                continue
            try:
                key.public_key.verify(signature, signed, padding.PKCS1v15(), hashes.SHA256())
                good = True
                break
            except InvalidSignature:
                continue
        if not good:
            raise GrantError("Invalid JWT Signature.")   # Google's wording
        for claim in ("iss", "scope", "aud"):
            if not isinstance(claims.get(claim), str) or not claims[claim]:
                raise GrantError("Invalid JWT: the %s claim is missing." % claim)
        if claims["aud"] != self.token_url:
            raise GrantError("Invalid JWT: Failed audience check. The right audience is %s"
                             % self.token_url)
        iat, exp = claims.get("iat"), claims.get("exp")
        if (not isinstance(iat, (int, float)) or isinstance(iat, bool)
                or not isinstance(exp, (int, float)) or isinstance(exp, bool)
                or exp <= now or exp - iat > MAX_JWT_LIFETIME or exp <= iat
                or iat > now + IAT_SKEW):
            raise GrantError("Invalid JWT: Token must be a short-lived token (60 minutes) and in "
                             "a reasonable timeframe. Check your iat and exp values in the JWT "
                             "claim.")
        return claims

    def issue(self, claims, now):
        for t in [t for t, (exp, _, _) in self.issued.items() if exp <= now]:
            del self.issued[t]
        token = "ya29.test-" + secrets.token_urlsafe(32)   # Google access tokens start ya29.
        self.issued[token] = (now + self.lifetime, set(claims["scope"].split()), claims["iss"])
        self.issued_count += 1
        return token

    def check(self, token, now):
        """(ok, scopes or None, why)."""
        if token in self.accepted:
            return True, None, ""
        entry = self.issued.get(token)
        if entry is None:
            return False, None, "unknown token"
        if entry[0] <= now:
            return False, None, "expired token"
        return True, entry[1], ""

    def expire_all(self):
        self.issued.clear()


# ---------------------------------------------------------------------------------------------
# s3rver: signed requests with botocore's SigV4
# ---------------------------------------------------------------------------------------------

class Upstream:
    def __init__(self, url):
        parts = urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError("--s3 must be http://HOST:PORT, not %r" % url)
        self.host = parts.hostname
        self.port = parts.port or 80
        self.netloc = parts.netloc
        self.credentials = Credentials(S3_ACCESS_KEY, S3_SECRET_KEY)

    def _connect(self):
        return http.client.HTTPConnection(self.host, self.port, timeout=600)

    def send_raw(self, method, target, headers, body):
        """Sends exactly these headers (a list of pairs, Host included) and body. Returns
        (connection, response) with the body unread; the caller closes the connection."""
        conn = self._connect()
        try:
            conn.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
            for k, v in headers:
                conn.putheader(k, v)
            if body or method in ("PUT", "POST"):
                conn.putheader("Content-Length", str(len(body)))
            conn.endheaders(body if body else None)
            return conn, conn.getresponse()
        except BaseException:
            conn.close()
            raise

    def send_signed(self, method, target, headers, body):
        """Signs (SigV4, S3RVER/S3RVER, us-east-1, service s3, SHA-256 of the body: botocore
        hashes the payload on plain http) and sends. target must already be in S3's canonical
        encoding (canonical_target), since S3 signs the path as sent."""
        req = AWSRequest(method=method, url="http://%s%s" % (self.netloc, target), data=body,
                         headers=dict(headers))
        req.headers["Host"] = self.netloc
        S3SigV4Auth(self.credentials, "s3", S3_REGION).add_auth(req)
        return self.send_raw(method, target, list(req.headers.items()), body)

    def head(self, key_path):
        """(status, headers) of HEAD key_path (canonical path)."""
        conn, resp = self.send_signed("HEAD", key_path, [], b"")
        try:
            resp.read()
            return resp.status, resp
        finally:
            conn.close()


def canonical_target(raw_path, raw_query):
    """The request target re-encoded the way s3rver canonicalizes it for SigV4: path segments
    with RFC 3986 encoding (encodeURIComponentRFC3986), query names and values as JavaScript's
    encodeURIComponent (which leaves !'()* alone). botocore signs the target as given, so the
    two sides then agree whatever encoding the client chose. (s3rver sorts "k=v" strings where
    botocore sorts (k, v) pairs; they differ only when one parameter name is a prefix of another
    followed by a character below '=', which no S3 call used here has.)"""
    path = quote(unquote(raw_path), safe="/-_.~")
    pairs = parse_qsl(raw_query, keep_blank_values=True)
    query = "&".join("%s=%s" % (quote(k, safe="-_.~!'()*"), quote(v, safe="-_.~!'()*"))
                     for k, v in pairs)
    return path + ("?" + query if query else "")


# ---------------------------------------------------------------------------------------------
# Generations (what GCS adds to S3's object model)
# ---------------------------------------------------------------------------------------------

class Generations:
    """key -> (generation, ETag seen with it). GCS gives every object version a generation
    number (microseconds since the epoch on real GCS; here an increasing integer starting at
    int(time.time()*1e6)) and a metageneration (1 until metadata changes; always 1 here)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.records = {}
        self.locks = collections.defaultdict(RWLock)
        self.last = int(time.time() * 1e6)

    def key_lock(self, key):
        with self.lock:
            return self.locks[key]

    def _next(self):
        self.last = max(self.last + 1, int(time.time() * 1e6))
        return self.last

    def new(self, key, etag):
        """A write succeeded: a new generation."""
        with self.lock:
            gen = self._next()
            self.records[key] = (gen, etag)
            return gen

    def observe(self, key, etag):
        """s3rver has the object with this ETag: its generation. An object first seen here
        (written before the proxy started, or straight into s3rver) gets one now; so does one
        whose ETag changed behind the proxy's back (rewritten straight into s3rver)."""
        with self.lock:
            rec = self.records.get(key)
            if rec is None or (etag and rec[1] and etag != rec[1]):
                rec = (self._next(), etag)
                self.records[key] = rec
            return rec[0]

    def forget(self, key):
        with self.lock:
            self.records.pop(key, None)

    def snapshot(self):
        with self.lock:
            return {k: v[0] for k, v in self.records.items()}


class Preconditions:
    """x-goog-if-generation-match / x-goog-if-metageneration-match of one request."""

    def __init__(self, headers):
        self.generation = self._int(headers, "x-goog-if-generation-match")
        self.metageneration = self._int(headers, "x-goog-if-metageneration-match")

    @staticmethod
    def _int(headers, name):
        raw = headers.get(name)
        if raw is None:
            return None
        raw = raw.strip()
        if not re.fullmatch(r"[0-9]{1,19}", raw):
            raise BadRequest("InvalidArgument", "Invalid argument.",
                             "%s must be a non-negative integer, not %r" % (name, raw))
        return int(raw)

    def __bool__(self):
        return self.generation is not None or self.metageneration is not None

    def check(self, current):
        """None when they hold for an object whose generation is current (None: absent), else
        the 412 reply. §6: if-generation-match 0 = "only created if there is no existing
        object"; N = only if the live generation is N, so an absent object fails it too
        (GCS, not in §6)."""
        if self.generation is not None:
            if self.generation == 0 and current is not None:
                return precondition_failed("x-goog-if-generation-match: 0 but the object exists "
                                           "(generation %d)" % current)
            if self.generation != 0 and current != self.generation:
                return precondition_failed(
                    "x-goog-if-generation-match: %d but the object %s" % (
                        self.generation, "does not exist" if current is None
                        else "has generation %d" % current))
        if self.metageneration is not None and (current is None or self.metageneration != 1):
            return precondition_failed("x-goog-if-metageneration-match: %d but the object %s" % (
                self.metageneration, "does not exist" if current is None
                else "has metageneration 1"))
        return None


class BadRequest(Exception):
    def __init__(self, code, message, details=None, status=400):
        super().__init__(message)
        self.reply = gcs_error(status, code, message, details)


# ---------------------------------------------------------------------------------------------
# The application
# ---------------------------------------------------------------------------------------------

class Auth:
    """Who sent a data request: kind "bearer" (scopes: a set, or None for all) or "hmac"."""

    def __init__(self, kind, scopes=None):
        self.kind = kind
        self.scopes = scopes


class Request:
    def __init__(self, method, target, headers, body):
        parts = urlsplit(target)
        self.method = method
        self.target = target
        self.raw_path = parts.path or "/"
        self.raw_query = parts.query
        self.query = parse_qs(parts.query, keep_blank_values=True)
        self.headers = headers   # email.message.Message: case-insensitive get()
        self.body = body


class App:
    def __init__(self, args, keys):
        self.args = args
        self.bucket = args.bucket
        self.upstream = Upstream(args.s3)
        self.keys = keys
        self.tokens = None           # set in main() once the port (the token URL) is known
        self.gens = Generations()
        self.lock = threading.Lock()
        self.by_method = collections.Counter()
        self.statuses = collections.Counter()
        self.schemes = []            # Authorization schemes in the order first seen
        self.scheme_counts = collections.Counter()
        self.x_amz_dropped = 0
        self.requests_total = 0

    # ----- bookkeeping -----

    def count_request(self, req):
        with self.lock:
            self.requests_total += 1
            self.by_method[req.method] += 1

    def count_status(self, status):
        with self.lock:
            self.statuses[str(status)] += 1

    def note_scheme(self, scheme):
        with self.lock:
            if scheme not in self.scheme_counts:
                self.schemes.append(scheme)
            self.scheme_counts[scheme] += 1

    def state(self):
        with self.lock:
            s = {
                "token_url": self.tokens.token_url,
                "requests_total": self.requests_total,
                "requests_by_method": dict(self.by_method),
                "statuses": dict(self.statuses),
                "sent_401": self.statuses.get("401", 0),
                "sent_412": self.statuses.get("412", 0),
                # the same counts under the names the metadata test server uses
                "unauthorized": self.statuses.get("401", 0),
                "precondition_failed": self.statuses.get("412", 0),
                "tokens_issued": self.tokens.issued_count,
                "tokens_valid": sum(1 for e, _, _ in self.tokens.issued.values()
                                    if e > time.time()),
                "auth_schemes": list(self.schemes),
                "auth_scheme_counts": dict(self.scheme_counts),
                "x_amz_headers_dropped": self.x_amz_dropped,
            }
        s["generations"] = self.gens.snapshot()
        return s

    # ----- the token endpoint -----

    def token_endpoint(self, req):
        """POST /token: the OAuth2 JWT-bearer grant (RFC 7523), as Google's token_uri. Errors
        are 400 with {"error", "error_description"}, like oauth2.googleapis.com."""
        if req.method != "POST":
            return json_reply(405, {"error": "invalid_request",
                                    "error_description": "the token endpoint takes POST"},
                              headers=[("Allow", "POST")])
        try:
            ctype = (req.headers.get("Content-Type") or "").split(";")[0].strip().lower()
            if ctype != "application/x-www-form-urlencoded":
                raise GrantError("the body must be application/x-www-form-urlencoded",
                                 "invalid_request")
            try:
                form = parse_qs(req.body.decode("utf-8"), keep_blank_values=True,
                                strict_parsing=bool(req.body))
            except (UnicodeDecodeError, ValueError):
                raise GrantError("the form body does not parse", "invalid_request")
            grant = form.get("grant_type", [""])[0]
            if grant != JWT_BEARER:
                raise GrantError("Invalid grant_type: %s" % grant, "unsupported_grant_type")
            assertion = form.get("assertion", [""])[0]
            if not assertion:
                raise GrantError("Missing required parameter: assertion", "invalid_request")
            now = time.time()
            claims = self.tokens.verify_jwt(assertion, now)
            with self.lock:
                token = self.tokens.issue(claims, now)
        except GrantError as e:
            return json_reply(400, {"error": e.code, "error_description": e.description})
        return json_reply(200, {"access_token": token, "expires_in": int(self.args.token_lifetime),
                                "token_type": "Bearer"},
                          headers=[("Cache-Control", "no-cache, no-store, max-age=0")])

    # ----- authentication of data requests -----

    @staticmethod
    def scheme_of(req):
        """The Authorization scheme as sent ("Bearer", "AWS4-HMAC-SHA256", ...), or
        "AWS4-HMAC-SHA256 (query)" for a presigned URL, or "(none)"."""
        authz = req.headers.get("Authorization") or ""
        if authz:
            return authz.split(" ", 1)[0]
        return "AWS4-HMAC-SHA256 (query)" if "X-Amz-Algorithm" in req.query else "(none)"

    def authenticate(self, req, note=True):
        """An Auth, or the 401 Reply. §6: the XML API takes Bearer <OAuth2 token> (or, with
        --allow-hmac, a V4 signature made with HMAC credentials). note: count the scheme."""
        authz = req.headers.get("Authorization") or ""
        presigned = "X-Amz-Algorithm" in req.query
        scheme = self.scheme_of(req)
        if note:
            self.note_scheme(scheme)
        if scheme.lower() == "bearer":
            token = authz.split(" ", 1)[1].strip() if " " in authz else ""
            with self.lock:
                ok, scopes, why = self.tokens.check(token, time.time())
            if ok:
                return Auth("bearer", scopes)
            return self.unauthorized("Invalid Credentials (%s)." % why)
        if self.args.allow_hmac and (scheme == "AWS4-HMAC-SHA256" or (presigned and not authz)):
            return Auth("hmac")
        if not authz:
            return self.unauthorized("Anonymous caller: no Authorization header.")
        return self.unauthorized("Authorization scheme %s is not accepted here%s." % (
            scheme[:40], "" if self.args.allow_hmac else " (Bearer only; see --allow-hmac)"))

    @staticmethod
    def unauthorized(details):
        # (GCS, not in §6) An invalid or expired OAuth token gets 401 AuthenticationRequired;
        # Google APIs also send WWW-Authenticate: Bearer on 401.
        return gcs_error(401, "AuthenticationRequired", "Authentication required.", details,
                         headers=[("WWW-Authenticate",
                                   'Bearer realm="https://accounts.google.com/"')])

    @staticmethod
    def scope_denied(auth, write):
        """(GCS, not in §6) Google checks the token's OAuth scopes against the call: 403."""
        if auth.kind != "bearer" or auth.scopes is None:
            return None
        if auth.scopes & (WRITE_SCOPES if write else READ_SCOPES):
            return None
        return gcs_error(403, "AccessDenied", "Access denied.",
                         "Provided scope(s) are not authorized")

    # ----- building the upstream request -----

    def upstream_headers(self, req, auth):
        """Headers for s3rver. Bearer: a rebuilt S3 request (whitelist + translations), signed
        later. HMAC: the client's own headers unchanged (its signature covers them)."""
        if auth.kind == "hmac":
            return [(k, v) for k, v in req.headers.items() if k.lower() not in HOP_BY_HOP]
        out = []
        names = FORWARD_HEADERS + (READ_CONDITIONAL_HEADERS if req.method in ("GET", "HEAD")
                                   else ())
        for name in names:
            v = req.headers.get(name)
            if v is not None:
                out.append((name, v))
        dropped = 0
        for k, v in req.headers.items():
            lk = k.lower()
            if lk.startswith("x-goog-meta-"):
                out.append(("x-amz-meta-" + k[len("x-goog-meta-"):], v))   # custom metadata
            elif lk == "x-goog-copy-source":
                out.append(("x-amz-copy-source", v))                      # XML API copy
            elif lk == "x-goog-metadata-directive":
                out.append(("x-amz-metadata-directive", v))
            elif lk == "x-goog-hash" and req.headers.get("Content-MD5") is None:
                # GCS verifies x-goog-hash: md5=<base64>; s3rver verifies Content-MD5.
                for item in v.split(","):
                    name, _, value = item.strip().partition("=")
                    if name.lower() == "md5" and value:
                        out.append(("Content-MD5", value))
            elif lk.startswith("x-amz-"):
                dropped += 1
        if dropped:
            with self.lock:
                self.x_amz_dropped += dropped
        return out

    def forward(self, req, auth):
        """Sends req to s3rver: (connection, response), body unread."""
        headers = self.upstream_headers(req, auth)
        if auth.kind == "hmac":
            # The client signed its own Host and target: pass them as they are.
            return self.upstream.send_raw(req.method, req.target, headers, req.body)
        return self.upstream.send_signed(req.method,
                                         canonical_target(req.raw_path, req.raw_query),
                                         headers, req.body)

    @staticmethod
    def relay_headers(resp):
        out = []
        for name in RELAY_HEADERS:
            v = resp.getheader(name)
            if v is not None:
                out.append((name, v))
        for k, v in resp.getheaders():
            if k.lower().startswith("x-amz-meta-"):
                out.append(("x-goog-meta-" + k[len("x-amz-meta-"):], v))
        return out

    @staticmethod
    def generation_headers(gen, resp=None):
        """x-goog-generation / -metageneration (+ x-goog-hash md5 and the stored length, which
        GCS sends on object reads, when they can be told from s3rver's answer)."""
        out = [("x-goog-generation", str(gen)), ("x-goog-metageneration", "1")]
        if resp is not None:
            etag = (resp.getheader("ETag") or "").strip('"')
            if re.fullmatch(r"[0-9a-f]{32}", etag):   # a single-part ETag is the MD5
                out.append(("x-goog-hash", "md5=" + base64.b64encode(bytes.fromhex(etag))
                            .decode()))
            total = None
            crange = resp.getheader("Content-Range") or ""
            m = re.search(r"/(\d+)$", crange)
            if m:
                total = m.group(1)
            elif resp.status == 200 and resp.getheader("Content-Length"):
                total = resp.getheader("Content-Length")
            if total is not None:
                out.append(("x-goog-stored-content-length", total))
            out.append(("x-goog-storage-class", "STANDARD"))
        return out

    def buffered(self, conn, resp, extra_headers=()):
        """Reads the whole upstream answer into a Reply and closes the connection."""
        try:
            data = resp.read()
        finally:
            conn.close()
        return Reply(resp.status, data, None, self.relay_headers(resp) + list(extra_headers))

    def current_generation(self, canon_key_path, key):
        """The live generation of key, asking s3rver whether the object exists (None: absent).
        Keeps the dict in step with s3rver (first sight, deletions behind the proxy's back)."""
        status, resp = self.upstream.head(canon_key_path)
        if status == 404:
            self.gens.forget(key)
            return None
        if status != 200:
            raise BadRequest("InternalError", "s3rver answered HEAD with %d" % status,
                             status=500)
        return self.gens.observe(key, resp.getheader("ETag"))

    # ----- dispatch -----

    def handle(self, req):
        if req.raw_path == "/token":
            return self.token_endpoint(req)
        auth = self.authenticate(req)
        if isinstance(auth, Reply):
            return auth
        path = req.raw_path
        if path == "/":
            denied = self.scope_denied(auth, req.method not in ("GET", "HEAD"))
            if denied:
                return denied
            conn, resp = self.forward(req, auth)
            return self.buffered(conn, resp)
        bucket, _, raw_key = path[1:].partition("/")
        if unquote(bucket) != self.bucket:
            return gcs_error(404, "NoSuchBucket", "The specified bucket does not exist.",
                             "only bucket %s is served here" % self.bucket)
        key = unquote(raw_key)
        write = req.method not in ("GET", "HEAD")
        denied = self.scope_denied(auth, write)
        if denied:
            return denied
        if not key:
            return self.bucket_request(req, auth)
        return self.object_request(req, auth, key)

    def bucket_request(self, req, auth):
        if req.method == "POST" and "delete" in req.query:
            # Multi-object delete: Google's XML API reference now documents it (post-bucket,
            # up to 1000 keys), but this front answers as GCS did when the agent's GCS store
            # was written, and the agent deletes one by one on GCS (docs/failure-modes.md,
            # the differences table). Serving it is left for when the store uses it.
            return gcs_error(501, "NotImplemented",
                             "A header or query you provided requested a function that is "
                             "not implemented.", "POST ?delete (multi-object delete) is not "
                             "part of the GCS XML API")
        # ListObjectsV2 (list-type=2, continuation tokens...) and the rest: as s3rver does it.
        conn, resp = self.forward(req, auth)
        return self.buffered(conn, resp)

    def object_request(self, req, auth, key):
        mpu = "uploads" in req.query or "uploadId" in req.query
        conds = Preconditions(req.headers)
        if mpu:
            if conds:
                # §6 XML multipart upload: "Preconditions are not supported in the requests".
                return gcs_error(400, "InvalidArgument", "Invalid argument.",
                                 "Preconditions are not supported in multipart upload requests.")
            if req.method == "POST" and "uploadId" in req.query:
                return self.complete_upload(req, auth, key)
            conn, resp = self.forward(req, auth)   # initiate, upload part, abort
            return self.buffered(conn, resp)
        subresource = any(q in req.query for q in ("acl", "tagging", "torrent", "retention",
                                                     "legal-hold"))
        if subresource:
            conn, resp = self.forward(req, auth)
            return self.buffered(conn, resp)
        if req.method == "PUT":
            return self.put_object(req, auth, key, conds)
        if req.method in ("GET", "HEAD"):
            return self.get_object(req, auth, key, conds)
        if req.method == "DELETE":
            return self.delete_object(req, auth, key, conds)
        conn, resp = self.forward(req, auth)   # POST object (form upload) etc.: as s3rver
        return self.buffered(conn, resp)

    def _key_path(self, key):
        return quote("/%s/%s" % (self.bucket, key), safe="/-_.~")

    def put_object(self, req, auth, key, conds):
        """PUT Object (and copy): the precondition check and the write are atomic per key
        (GCS guarantees that only one of two racing create-only writes succeeds)."""
        lock = self.gens.key_lock(key)
        lock.acquire_write()
        try:
            if conds:
                rejected = conds.check(self.current_generation(self._key_path(key), key))
                if rejected:
                    return rejected
            conn, resp = self.forward(req, auth)
            reply = self.buffered(conn, resp)
            if resp.status == 200 and b"<Error>" not in reply.body:
                etag = resp.getheader("ETag")
                if not etag:                 # copy: the ETag is in the body; ask s3rver
                    _, head = self.upstream.head(self._key_path(key))
                    etag = head.getheader("ETag")
                gen = self.gens.new(key, etag)
                reply.headers += self.generation_headers(gen)
            return reply
        finally:
            lock.release_write()

    def complete_upload(self, req, auth, key):
        """CompleteMultipartUpload: the result replaces the object (§6), a new generation."""
        lock = self.gens.key_lock(key)
        lock.acquire_write()
        try:
            conn, resp = self.forward(req, auth)
            reply = self.buffered(conn, resp)
            # S3-style: a 200 may still carry an <Error> (the S3 API reference).
            if resp.status == 200 and b"<Error>" not in reply.body:
                status, head = self.upstream.head(self._key_path(key))
                if status == 200:
                    gen = self.gens.new(key, head.getheader("ETag"))
                    reply.headers += self.generation_headers(gen)
            return reply
        finally:
            lock.release_write()

    def get_object(self, req, auth, key, conds):
        """GET/HEAD Object with x-goog-generation, honouring x-goog-if-generation-match.
        The read lock is held until the answer is complete, so the body matches the generation
        reported. Bodies up to BUFFER_LIMIT are read at once and the lock dropped before they
        are sent (a client that stalls on a GET while it writes the same key cannot deadlock);
        larger ones stream under the lock."""
        lock = self.gens.key_lock(key)
        lock.acquire_read()
        release = lock.release_read
        try:
            if conds:
                rejected = conds.check(self.current_generation(self._key_path(key), key))
                if rejected:
                    return rejected
            conn, resp = self.forward(req, auth)
            headers = self.relay_headers(resp)
            if resp.status in (200, 206, 304):
                headers += self.generation_headers(self.gens.observe(key, resp.getheader("ETag")),
                                                   resp)
            elif resp.status == 404:
                self.gens.forget(key)
            length = resp.getheader("Content-Length")
            if req.method == "HEAD" or resp.status == 304:
                resp.read()
                conn.close()
                return Reply(resp.status, b"", None, headers,
                             length=int(length) if length and req.method == "HEAD" else 0)
            if length is not None and int(length) > BUFFER_LIMIT:
                release, streamed = None, release   # the sender releases it
                return Reply(resp.status, b"", None, headers, stream=(conn, resp),
                             length=int(length), release=streamed)
            try:
                data = resp.read()
            finally:
                conn.close()
            return Reply(resp.status, data, None, headers)
        finally:
            if release:
                release()

    def delete_object(self, req, auth, key, conds):
        """DELETE Object. (GCS, not in §6) 404 NoSuchKey for an object that does not exist (S3 and
        s3rver answer 204), and forgets the generation of a deleted one."""
        lock = self.gens.key_lock(key)
        lock.acquire_write()
        try:
            current = self.current_generation(self._key_path(key), key)
            if conds:
                rejected = conds.check(current)
                if rejected:
                    return rejected
            if current is None:
                return gcs_error(404, "NoSuchKey", "The specified key does not exist.")
            conn, resp = self.forward(req, auth)
            reply = self.buffered(conn, resp)
            if resp.status in (200, 204):
                self.gens.forget(key)
            return reply
        finally:
            lock.release_write()


# ---------------------------------------------------------------------------------------------
# HTTP plumbing
# ---------------------------------------------------------------------------------------------

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"   # keep-alive; every answer has a Content-Length

    def version_string(self):
        return "UploadServer"      # what storage.googleapis.com calls itself

    def log_request(self, code="-", size="-"):
        status = code.value if hasattr(code, "value") else code
        sys.stderr.write("%s %s %s -> %s\n" % (log_time(), self.command or "-",
                                               getattr(self, "path", "-"), status))
        sys.stderr.flush()

    def log_message(self, fmt, *args):
        sys.stderr.write("%s %s\n" % (log_time(), fmt % args))
        sys.stderr.flush()

    def handle_expect_100(self):
        """Expect: 100-continue (libcurl sends it before bodies over 1 MiB): a request that
        will be refused for its credentials gets its 401 now, before the body is sent, and the
        connection is closed (the unread body cannot be skipped). Others get 100 Continue."""
        app = self.server.app
        path = urlsplit(self.path).path
        if not path.startswith("/_test/") and path != "/token":
            req = Request(self.command, self.path, self.headers, b"")
            auth = app.authenticate(req, note=False)   # _dispatch counts the accepted ones
            if isinstance(auth, Reply):
                app.note_scheme(app.scheme_of(req))
                app.count_request(req)
                app.count_status(auth.status)
                self.close_connection = True
                self._send(auth, extra=[("Connection", "close")])
                return False
        return super().handle_expect_100()

    def _read_body(self):
        """The request body (Content-Length or chunked), or None after answering an error."""
        return read_body(self, self.server.app.args.max_body, self._fatal)

    def _fatal(self, status, text):
        self.close_connection = True
        self.server.app.count_status(status)
        self._send(gcs_error(status, "InvalidArgument" if status == 400 else "EntityTooLarge",
                             text), extra=[("Connection", "close")])

    def _send(self, reply, extra=()):
        self.send_response(reply.status)
        if reply.ctype:
            self.send_header("Content-Type", reply.ctype)
        length = reply.length if reply.length is not None else len(reply.body)
        if self.command == "HEAD" and reply.length is None:
            length = len(reply.body)
        self.send_header("Content-Length", str(length))
        for k, v in list(reply.headers) + list(extra):
            self.send_header(k, v)
        self.end_headers()
        if self.command == "HEAD":
            return
        if reply.stream is not None:
            conn, resp = reply.stream
            try:
                left = length
                while left > 0:
                    data = resp.read(min(CHUNK, left))
                    if not data:
                        break
                    self.wfile.write(data)
                    left -= len(data)
                if left:
                    self.close_connection = True   # s3rver stopped short: so must we
            finally:
                conn.close()
        elif reply.body:
            self.wfile.write(reply.body)

    def _dispatch(self):
        app = self.server.app
        body = self._read_body()
        if body is None:
            return
        req = Request(self.command, self.path, self.headers, body)
        if req.raw_path.startswith("/_test/"):
            self._send(self._control(req))
            return
        app.count_request(req)
        try:
            reply = app.handle(req)
        except BadRequest as e:
            reply = e.reply
        except (ConnectionError, socket.timeout, http.client.HTTPException) as e:
            sys.stderr.write("%s s3rver unreachable: %r\n" % (log_time(), e))
            reply = gcs_error(503, "ServiceUnavailable", "Service unavailable.",
                              "the backing s3rver did not answer: %s" % e)
        except Exception:
            traceback.print_exc()
            reply = gcs_error(500, "InternalError", "Internal error.")
        app.count_status(reply.status)
        try:
            self._send(reply)
        finally:
            if reply.release:
                reply.release()

    def _control(self, req):
        app = self.server.app
        if req.raw_path == "/_test/state" and req.method == "GET":
            return json_reply(200, app.state())
        if req.raw_path == "/_test/expire-tokens" and req.method == "POST":
            with app.lock:
                n = len(app.tokens.issued)
                app.tokens.expire_all()
            return json_reply(200, {"expired": n})
        return json_reply(404, {"error": "unknown control request %s %s"
                                         % (req.method, req.raw_path)})

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _dispatch


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, app):
        self.app = app
        if ":" in addr[0]:
            self.address_family = socket.AF_INET6
        super().__init__(addr, Handler)

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError, OSError)):
            return   # a client that went away
        super().handle_error(request, client_address)


def main(argv=None):
    ap = argparse.ArgumentParser(description="GCS XML API test server in front of s3rver.")
    ap.add_argument("--port", type=int, required=True, help="0 picks a free port")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--s3", required=True, help="s3rver base URL, http://127.0.0.1:PORT")
    ap.add_argument("--bucket", required=True, help="the bucket served (same name in s3rver)")
    ap.add_argument("--key-file", action="append", default=[],
                    help="service-account JSON or PEM that verifies JWTs (repeatable)")
    ap.add_argument("--accept-token", action="append", default=[],
                    help="an access token accepted without /token (repeatable)")
    ap.add_argument("--token-lifetime", type=float, default=3600,
                    help="lifetime of issued tokens in seconds (default 3600)")
    ap.add_argument("--allow-hmac", action="store_true",
                    help="also forward AWS4-HMAC-SHA256-signed requests unchanged")
    ap.add_argument("--max-body", type=int, default=2 << 30,
                    help="largest request body accepted, bytes (default 2 GiB)")
    ap.add_argument("--token-url", default=None,
                    help="the token_uri clients sign JWTs for (aud), when they reach this "
                         "server through a TLS terminator; default http://HOST:PORT/token")
    args = ap.parse_args(argv)
    if args.token_lifetime <= 0:
        ap.error("--token-lifetime must be positive")

    try:
        keys = [load_key(p) for p in args.key_file]
        app = App(args, keys)
    except (OSError, ValueError) as e:
        sys.stderr.write("server.py: %s\n" % e)
        return 2
    srv = Server((args.host, args.port), app)
    port = srv.server_address[1]
    host = "[%s]" % args.host if ":" in args.host else args.host
    app.tokens = Tokens(keys, args.token_url or "http://%s:%d/token" % (host, port),
                        args.token_lifetime,
                        args.accept_token)
    threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1},
                     daemon=True).start()
    sys.stdout.write("ready %d\n" % port)
    sys.stdout.flush()

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.wait(1):
        pass
    srv.shutdown()
    srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
