#!/usr/bin/python3
"""A loopback HTTP/1.1 proxy that injects faults between a client (the agent, the bench)
and an S3-protocol server (s3rver) or Azure's Blob service (Azurite), on a schedule.

run: proxy.py --upstream 127.0.0.1:PORT [--port 0] [--control-port 0] [--rule JSON]...
It prints "control PORT" then "ready PORT" on stdout once it listens. Point the client's
endpoint (AWS_ENDPOINT_URL) at the ready port.

A rule is a JSON object:
  match:   "method" (e.g. "PUT"), "path" and "query" (Python regexes searched in the
           decoded path / raw query string); absent: any.
  when:    "nth": N   fire on the Nth matching request (1-based), then stop;
           "every": N fire on every Nth matching request (default 1);
           "times": K fire at most K times (default: 1 with nth, unlimited otherwise);
           "after": N let the first N matching requests through first.
  action:  "reset_mid_body"     read part of the request body, then reset the connection
                                (nothing reaches the server);
           "reset_after_apply"  forward the whole request, let the server answer, then
                                reset the client's connection without answering;
           "reset_mid_answer"   forward, then send the answer's head and first bytes
                                ("answer_bytes", default half the body), then reset;
           "error"              answer an error document ("status" 503, "code"
                                "SlowDown"; "body_len" pads or cuts the XML to exactly that
                                many bytes; "retry_after" adds a Retry-After header of that
                                many seconds); the request is not forwarded. A request that
                                carries x-ms-version gets Azure's form instead (see below;
                                "code" default ServerBusy for 503, InternalError for 500);
           "stall"              hold the request "seconds" before forwarding it;
           "skewed"             403 RequestTimeTooSkewed naming ServerTime = now +
                                "skew_seconds" (Azure's form for a request that carries
                                x-ms-version: 403 AuthenticationFailed, see below);
           "wrong_region"       301 PermanentRedirect (or "status": 400
                                AuthorizationHeaderMalformed) naming "region".
Rules are tried in order; the first that fires acts (one action per request).

Control API (plain HTTP on the control port):
  POST   /rules    body: a rule (or a list of rules), appended; answers {"ids": [...]}
  DELETE /rules    removes every rule
  GET    /rules    the rules with how often each matched and fired
  GET    /log      one entry per request: n, method, path, query, x-amz-date, x-ms-date,
                   action
  DELETE /log      forgets the log

With --max-skew SECONDS the proxy refuses, as S3 does (900 s there), any request whose
x-amz-date is further than that from its own clock: 403 RequestTimeTooSkewed naming its own
time as ServerTime (and the Date header every answer has). A request to Azure whose x-ms-date
is that far off gets what Azure answers a request dated more than 15 minutes back ("Authorize
with Shared Key"): 403 AuthenticationFailed with an AuthenticationErrorDetail "Request date
header too old: '<x-ms-date>'"; Azure documents only the date too old, the proxy refuses one
too far ahead as well (saying "...in the future"), the stricter test.

With --s3-preconditions ACCESS_KEY:SECRET:REGION the proxy also enforces the conditional
writes that S3 honours and some stand-ins ignore (s3rver 5.0.0 does): a PUT or a
CompleteMultipartUpload with "If-None-Match: *" on a key that exists, or with "If-Match" on
a key whose ETag differs, gets 412 PreconditionFailed without being forwarded (the proxy
asks the server with a HEAD it signs itself).

The error documents follow S3's REST error format (an <Error> root with Code, Message,
RequestId, HostId; RequestTimeTooSkewed adds RequestTime, ServerTime and
MaxAllowedSkewMilliseconds; PermanentRedirect adds Bucket and Endpoint and the
x-amz-bucket-region header; AuthorizationHeaderMalformed adds Region). Azure's ("Blob
service error codes", "Status and error codes"): the message as the status line's reason,
the code in an x-ms-error-code header too, x-ms-request-id and x-ms-version headers, and a
body that starts with a UTF-8 byte order mark: <Error><Code> and a <Message> whose second
and third lines are RequestId:... and Time:....
"""

import argparse
import datetime
import hashlib
import hmac
import json
import re
import socket
import socketserver
import struct
import sys
import threading
import time
import urllib.parse
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

MAX_HEAD = 256 << 10
MAX_BODY = 1 << 31
ACTIONS = ("reset_mid_body", "reset_after_apply", "reset_mid_answer", "error", "stall",
           "skewed", "wrong_region")
MESSAGES = {
    "SlowDown": "Please reduce your request rate.",
    "InternalError": "We encountered an internal error. Please try again.",
    "ServiceUnavailable": "Service is unable to handle request.",
    "RequestTimeTooSkewed": "The difference between the request time and the current time "
                            "is too large.",
    "PermanentRedirect": "The bucket you are attempting to access must be addressed using "
                         "the specified endpoint. Please send all future requests to this "
                         "endpoint.",
    "AuthorizationHeaderMalformed": "The authorization header is malformed; the region "
                                    "'us-east-1' is wrong; expecting '%s'",
    "ExpiredToken": "The provided token has expired.",
    "PreconditionFailed": "At least one of the pre-conditions you specified did not hold",
}
AZURE_MESSAGES = {
    "ServerBusy": "The server is busy.",
    "OperationTimedOut": "The operation could not be completed within the permitted time.",
    "InternalError": "The server encountered an internal error. Please retry the request.",
    "AuthenticationFailed": "Server failed to authenticate the request. Make sure the value of "
                            "Authorization header is formed correctly including the signature.",
}
REASONS = {200: "OK", 206: "Partial Content", 301: "Moved Permanently", 400: "Bad Request",
           403: "Forbidden", 404: "Not Found", 412: "Precondition Failed",
           500: "Internal Server Error", 503: "Slow Down"}


class State:
    def __init__(self):
        self.lock = threading.Lock()
        self.rules = []
        self.log = []
        self.n = 0

    def add_rule(self, rule):
        action = rule.get("action")
        if action not in ACTIONS:
            raise ValueError("action must be one of %s" % ", ".join(ACTIONS))
        for k in ("path", "query"):
            if k in rule:
                re.compile(rule[k])
        r = dict(rule)
        r.setdefault("times", 1 if "nth" in r else None)
        r["id"] = len(self.rules) + 1
        r["matched"] = 0
        r["fired"] = 0
        with self.lock:
            self.rules.append(r)
        return r["id"]

    def pick(self, method, path, query):
        """The rule that fires for this request (counting matches), or None."""
        with self.lock:
            self.n += 1
            for r in self.rules:
                if r.get("method") and r["method"] != method:
                    continue
                if r.get("path") and not re.search(r["path"], path):
                    continue
                if r.get("query") and not re.search(r["query"], query):
                    continue
                r["matched"] += 1
                m = r["matched"] - r.get("after", 0)
                if m <= 0:
                    continue
                if r["times"] is not None and r["fired"] >= r["times"]:
                    continue
                if "nth" in r:
                    fire = m == r["nth"]
                else:
                    fire = (m - 1) % max(1, r.get("every", 1)) == 0
                if fire:
                    r["fired"] += 1
                    return dict(r)
            return None

    def record(self, entry):
        with self.lock:
            entry["n"] = len(self.log) + 1
            self.log.append(entry)


STATE = State()
UPSTREAM = ("127.0.0.1", 0)
SIGNER = None  # (access key, secret, region) with --s3-preconditions
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


def sigv4_head(raw_path):
    """A HEAD request for raw_path (as on the wire), signed with SigV4 (AWS's "Signature Version 4
    for S3", sig-v4-header-based-auth)."""
    akid, secret, region = SIGNER
    host = "%s:%d" % UPSTREAM
    now = datetime.datetime.now(datetime.timezone.utc)
    amz_date, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    signed = "host;x-amz-content-sha256;x-amz-date"
    creq = "HEAD\n%s\n\nhost:%s\nx-amz-content-sha256:%s\nx-amz-date:%s\n\n%s\n%s" % (
        raw_path, host, EMPTY_SHA256, amz_date, signed, EMPTY_SHA256)
    scope = "%s/%s/s3/aws4_request" % (day, region)
    sts = "AWS4-HMAC-SHA256\n%s\n%s\n%s" % (amz_date, scope,
                                             hashlib.sha256(creq.encode()).hexdigest())
    key = ("AWS4" + secret).encode()
    for part in (day, region, "s3", "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    sig = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
    return ("HEAD %s HTTP/1.1\r\nHost: %s\r\nx-amz-content-sha256: %s\r\nx-amz-date: %s\r\n"
            "Authorization: AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, "
            "Signature=%s\r\n\r\n" % (raw_path, host, EMPTY_SHA256, amz_date, akid, scope,
                                       signed, sig)).encode()


def precondition_fails(method, target, query, headers):
    """Whether a conditional write would fail on S3: asks the server for the key's ETag."""
    inm, im = header(headers, "If-None-Match"), header(headers, "If-Match")
    if not SIGNER or not (inm or im):
        return False
    if not (method == "PUT" and "partNumber=" not in query) and \
            not (method == "POST" and "uploadId=" in query):
        return False
    up = Upstream()
    try:
        _, rheaders, rhead, _ = up.exchange(sigv4_head(target.split("?", 1)[0]), "HEAD")
        status = int(rhead.split(b" ", 2)[1])
    finally:
        up.close()
    if status == 404:
        return bool(im)
    if status != 200:
        raise OSError("HEAD for a precondition answered %d" % status)
    return inm == "*" or (im is not None and im != header(rheaders, "ETag"))


def reset(sock):
    """Closes with a TCP reset (RST), as a broken middlebox or a crashed server does."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


class Reader:
    """Buffered reads of one socket, bounded."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise EOFError
        self.buf += data

    def head(self):
        """The request or status line and headers, up to the blank line."""
        while b"\r\n\r\n" not in self.buf:
            if len(self.buf) > MAX_HEAD:
                raise ValueError("head too long")
            self.fill()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        return head + b"\r\n\r\n"

    def exactly(self, n):
        while len(self.buf) < n:
            self.fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def line(self):
        while b"\r\n" not in self.buf:
            if len(self.buf) > MAX_HEAD:
                raise ValueError("line too long")
            self.fill()
        out, self.buf = self.buf.split(b"\r\n", 1)
        return out + b"\r\n"

    def until_close(self):
        out = self.buf
        self.buf = b""
        while True:
            data = self.sock.recv(65536)
            if not data:
                return out
            out += data

    def chunked(self):
        """A chunked body, as the raw bytes that came (re-sent as they are)."""
        raw = b""
        while True:
            size_line = self.line()
            raw += size_line
            size = int(size_line.split(b";")[0].strip(), 16)
            if size == 0:
                while True:
                    trailer = self.line()
                    raw += trailer
                    if trailer == b"\r\n":
                        return raw
            raw += self.exactly(size + 2)


def parse_head(head):
    lines = head.decode("latin-1").split("\r\n")
    first = lines[0]
    headers = []
    for ln in lines[1:]:
        if not ln:
            continue
        name, _, value = ln.partition(":")
        headers.append((name.strip(), value.strip()))
    return first, headers


def header(headers, name):
    for k, v in headers:
        if k.lower() == name.lower():
            return v
    return None


def body_kind(headers):
    te = header(headers, "Transfer-Encoding")
    if te and "chunked" in te.lower():
        return "chunked", 0
    cl = header(headers, "Content-Length")
    if cl is not None:
        n = int(cl)
        if n < 0 or n > MAX_BODY:
            raise ValueError("bad Content-Length")
        return "length", n
    return None, 0


def s3_error(status, code, body_len=None, extra="", headers=(), msg=None):
    """An S3 REST error answer: (status, headers, body)."""
    msg = msg or MESSAGES.get(code, code)
    rid = uuid.uuid4().hex[:16].upper()
    doc = ('<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>%s</Code><Message>%s'
           '</Message>%s<RequestId>%s</RequestId><HostId>%s</HostId></Error>'
           % (code, msg, extra, rid, "faultproxy/" + rid)).encode()
    if body_len is not None:
        if body_len >= len(doc):
            # Whitespace before the root element keeps the document well-formed (S3 pads
            # its early 200 answers the same way).
            decl, rest = doc.split(b"\n", 1)
            doc = decl + b"\n" + b" " * (body_len - len(doc)) + rest
        else:
            doc = doc[:body_len]  # a cut document: what a broken answer looks like
    hs = [("Content-Type", "application/xml"), ("x-amz-request-id", rid)] + list(headers)
    return status, hs, doc


MAX_SKEW = None  # --max-skew


def request_age(headers):
    """How many seconds before this clock the request is dated (x-amz-date, or Azure's
    x-ms-date), negative when after; None when it has no readable date."""
    for name, fmt in (("x-amz-date", "%Y%m%dT%H%M%SZ"), ("x-ms-date", "%a, %d %b %Y %H:%M:%S GMT")):
        d = header(headers, name)
        if d is None:
            continue
        try:
            t = datetime.datetime.strptime(d, fmt).replace(tzinfo=datetime.timezone.utc)
        except ValueError:
            return None
        return (datetime.datetime.now(datetime.timezone.utc) - t).total_seconds()
    return None


def too_skewed(headers):
    """The request's date is further than --max-skew from this clock."""
    age = request_age(headers)
    return MAX_SKEW is not None and age is not None and abs(age) > MAX_SKEW


def azure_error(status, code, body_len=None, headers=(), detail=None):
    """An Azure Blob service error answer: (status, headers, body, reason)."""
    msg = AZURE_MESSAGES.get(code, code)
    rid = str(uuid.uuid4())
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f0Z")
    extra = ("<AuthenticationErrorDetail>%s</AuthenticationErrorDetail>" % detail
             if detail else "")
    doc = ('\ufeff<?xml version="1.0" encoding="utf-8"?><Error><Code>%s</Code><Message>%s\n'
           'RequestId:%s\nTime:%s</Message>%s</Error>' % (code, msg, rid, when, extra)).encode()
    if body_len is not None:
        doc = doc[:body_len] if body_len < len(doc) else doc + b" " * (body_len - len(doc))
    hs = [("Content-Type", "application/xml"), ("x-ms-request-id", rid),
          ("x-ms-version", "2021-08-06"), ("x-ms-error-code", code)] + list(headers)
    return status, hs, doc, msg


def iso_now(offset_s=0):
    t = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=offset_s)
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def synthetic(rule, req_headers, path):
    """The answer of an "error", "skewed" or "wrong_region" rule: (status, headers, body,
    reason or None)."""
    action = rule["action"]
    if action == "error":
        status = int(rule.get("status", 503))
        extra = [("Retry-After", str(rule["retry_after"]))] if "retry_after" in rule else []
        if header(req_headers, "x-ms-version"):
            code = rule.get("code", "ServerBusy" if status == 503 else "InternalError")
            return azure_error(status, code, rule.get("body_len"), extra)
        code = rule.get("code", "SlowDown" if status == 503 else "InternalError")
        return s3_error(status, code, rule.get("body_len"), headers=extra) + (None,)
    if action == "skewed" and header(req_headers, "x-ms-version"):
        dated = header(req_headers, "x-ms-date") or ""
        age = request_age(req_headers) or 0
        detail = ("Request date header too old: '%s'" % dated if age >= 0
                  else "Request date header is in the future: '%s'" % dated)
        return azure_error(403, "AuthenticationFailed", rule.get("body_len"), detail=detail)
    if action == "skewed":
        extra = ("<RequestTime>%s</RequestTime><ServerTime>%s</ServerTime>"
                 "<MaxAllowedSkewMilliseconds>900000</MaxAllowedSkewMilliseconds>"
                 % (header(req_headers, "x-amz-date") or "", iso_now(rule.get("skew_seconds", 3600))))
        return s3_error(403, "RequestTimeTooSkewed", rule.get("body_len"), extra) + (None,)
    region = rule.get("region", "eu-west-1")
    bucket = path.lstrip("/").split("/", 1)[0]
    if int(rule.get("status", 301)) == 400:
        code = "AuthorizationHeaderMalformed"
        return s3_error(400, code, None, "<Region>%s</Region>" % region,
                        [("x-amz-bucket-region", region)], MESSAGES[code] % region) + (None,)
    return s3_error(301, "PermanentRedirect", None,
                    "<Bucket>%s</Bucket><Endpoint>%s.s3.%s.amazonaws.com</Endpoint>"
                    % (bucket, bucket, region), [("x-amz-bucket-region", region)]) + (None,)


def answer_bytes(status, headers, body, method, reason=None):
    out = "HTTP/1.1 %d %s\r\n" % (status, reason or REASONS.get(status, "Error"))
    hs = [(k, v) for k, v in headers if k.lower() not in ("content-length", "connection",
                                                          "transfer-encoding")]
    hs.append(("Content-Length", str(len(body))))
    hs.append(("Date", datetime.datetime.now(datetime.timezone.utc)
               .strftime("%a, %d %b %Y %H:%M:%S GMT")))
    for k, v in hs:
        out += "%s: %s\r\n" % (k, v)
    out += "\r\n"
    return out.encode("latin-1") + (b"" if method == "HEAD" else body)


class Upstream:
    """One connection to the server, kept open across requests of one client connection."""

    def __init__(self):
        self.sock = None
        self.reader = None

    def close(self):
        if self.sock:
            self.sock.close()
        self.sock = None

    def exchange(self, raw_request, method):
        """Sends the request, returns (status line, headers, raw head, raw body)."""
        for attempt in (0, 1):
            if not self.sock:
                self.sock = socket.create_connection(UPSTREAM, timeout=120)
                self.reader = Reader(self.sock)
            try:
                self.sock.sendall(raw_request)
                head = self.reader.head()
                break
            except (EOFError, OSError):
                self.close()
                if attempt:
                    raise
        first, headers = parse_head(head)
        status = int(first.split()[1])
        kind, n = body_kind(headers)
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            body = b""
        elif kind == "chunked":
            body = self.reader.chunked()
        elif kind == "length":
            body = self.reader.exactly(n)
        else:
            body = self.reader.until_close()
            self.close()
        conn = header(headers, "Connection")
        if conn and conn.lower() == "close":
            self.close()
        return first, headers, head, body


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        client = self.request
        reader = Reader(client)
        up = Upstream()
        try:
            while True:
                try:
                    head = reader.head()
                except (EOFError, OSError):
                    return
                first, headers = parse_head(head)
                method, target = first.split()[0], first.split()[1]
                url = urllib.parse.urlsplit(target)
                path = urllib.parse.unquote(url.path)
                rule = STATE.pick(method, path, url.query)
                if not rule and too_skewed(headers):
                    rule = {"action": "skewed", "skew_seconds": 0}
                action = rule["action"] if rule else "forward"
                STATE.record({"method": method, "path": path, "query": url.query,
                              "x-amz-date": header(headers, "x-amz-date"),
                              "x-ms-date": header(headers, "x-ms-date"), "action": action})
                kind, n = body_kind(headers)
                if action == "reset_mid_body":
                    if kind == "length" and n > 1:
                        reader.exactly(max(1, n // 2))
                    reset(client)
                    return
                if kind == "chunked":
                    body = reader.chunked()
                elif kind == "length":
                    body = reader.exactly(n)
                else:
                    body = b""
                if action in ("error", "skewed", "wrong_region"):
                    status, hs, doc, reason = synthetic(rule, headers, path)
                    client.sendall(answer_bytes(status, hs, doc, method, reason))
                    continue
                if action != "reset_mid_answer" and \
                        precondition_fails(method, target, url.query, headers):
                    status, hs, doc = s3_error(412, "PreconditionFailed")
                    client.sendall(answer_bytes(status, hs, doc, method))
                    continue
                if action == "stall":
                    time.sleep(float(rule.get("seconds", 30)))
                try:
                    status_line, rheaders, rhead, rbody = up.exchange(head + body, method)
                except (EOFError, OSError):
                    reset(client)  # the server went away: so does the answer
                    return
                if action == "reset_after_apply":
                    reset(client)
                    return
                if action == "reset_mid_answer":
                    cut = int(rule.get("answer_bytes", len(rbody) // 2))
                    client.sendall(rhead + rbody[:cut])
                    time.sleep(0.05)
                    reset(client)
                    return
                client.sendall(rhead + rbody)
                conn = header(rheaders, "Connection")
                if conn and conn.lower() == "close":
                    client.close()
                    return
        except (OSError, ValueError) as e:
            print("proxy: connection dropped: %s" % e, file=sys.stderr, flush=True)
        finally:
            up.close()


class Proxy(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class Control(BaseHTTPRequestHandler):
    def log_message(self, fmt, *args):
        pass

    def reply(self, status, obj):
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        with STATE.lock:
            if self.path == "/rules":
                return self.reply(200, STATE.rules)
            if self.path == "/log":
                return self.reply(200, STATE.log)
        self.reply(404, {"error": "no such path"})

    def do_POST(self):
        if self.path != "/rules":
            return self.reply(404, {"error": "no such path"})
        n = int(self.headers.get("Content-Length", "0"))
        try:
            rules = json.loads(self.rfile.read(n))
            if isinstance(rules, dict):
                rules = [rules]
            ids = [STATE.add_rule(r) for r in rules]
        except (ValueError, re.error, TypeError) as e:
            return self.reply(400, {"error": str(e)})
        self.reply(200, {"ids": ids})

    def do_DELETE(self):
        with STATE.lock:
            if self.path == "/rules":
                STATE.rules = []
            elif self.path == "/log":
                STATE.log = []
            else:
                return self.reply(404, {"error": "no such path"})
        self.reply(200, {})


def main():
    global UPSTREAM, SIGNER, MAX_SKEW
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--upstream", required=True, help="HOST:PORT of the server")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--control-port", type=int, default=0)
    ap.add_argument("--rule", action="append", default=[], help="a rule as JSON")
    ap.add_argument("--max-skew", type=float, default=None, metavar="SECONDS",
                    help="refuse requests signed further than this from this clock")
    ap.add_argument("--s3-preconditions", metavar="AKID:SECRET:REGION",
                    help="enforce If-None-Match/If-Match on writes (see above)")
    a = ap.parse_args()
    if a.s3_preconditions:
        SIGNER = tuple(a.s3_preconditions.split(":", 2))
    MAX_SKEW = a.max_skew
    host, _, port = a.upstream.rpartition(":")
    UPSTREAM = (host or "127.0.0.1", int(port))
    for r in a.rule:
        STATE.add_rule(json.loads(r))
    proxy = Proxy(("127.0.0.1", a.port), Handler)
    control = ThreadingHTTPServer(("127.0.0.1", a.control_port), Control)
    control.daemon_threads = True
    threading.Thread(target=control.serve_forever, daemon=True).start()
    print("control %d" % control.server_address[1], flush=True)
    print("ready %d" % proxy.server_address[1], flush=True)
    try:
        proxy.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
