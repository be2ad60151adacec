#!/usr/bin/python3
"""A test server for the cloud metadata services that resume-run watches for preemption notices.

It emulates ONE cloud per process, faithful to the providers' documents,
cited below as "P§n": P§1 the EC2 user guide's IMDSv2 pages, P§2 Google's "About VM
metadata" and "Preemptible VM instances", P§3 Microsoft's "Azure Metadata Service: Scheduled
Events", P§8 amazon-ec2-metadata-mock's README (the numbering of the project's notes):

  aws    EC2 IMDSv2 only (P§1), modelled on amazon-ec2-metadata-mock run with -I (P§8)
  gcp    the GCE metadata server with hanging GETs (P§2)
  azure  IMDS Scheduled Events and the instance document (P§3); managed identity tokens
         (/metadata/identity/oauth2/token) and, on the same port, the Microsoft Entra
         token endpoint of the client credentials flow (POST /TENANT/oauth2/v2.0/token:
         a client secret or a federated assertion), cited as P§9 (the project's
         reference/protocols.md §9); point AZURE_AUTHORITY_HOST at this server

usage: server.py --cloud aws|gcp|azure --port PORT [--host 127.0.0.1] [--control-port PORT]

PORT 0 picks a free port. Once both sockets listen it prints on stdout, in one flushed write:
    control CONTROL_PORT
    ready PORT
(so a reader that waits for either line has both numbers). One line per request
goes to stderr: "<time> <method> <path> -> <status>". RR_TEST_GCP_TOKEN in the environment
sets the GCP service-account access token (default "gcp-token"; the secrets test makes it
distinctive).

Test control API (JSON answers, no cloud headers needed), served on the control port and, while
it is up, on the main port too. Times are seconds; `in` delays the change (default 0):
    POST /_test/announce?in=S       preemption notice (AWS spot/instance-action, GCP preempted,
                                    Azure Preempt event); records state.announced_at
    POST /_test/rebalance?in=S      AWS rebalance recommendation (other clouds: 400)
    POST /_test/maintenance?in=S    scheduled maintenance (AWS events, GCP maintenance-event,
                                    Azure Reboot for this VM + Freeze for another VM)
    POST /_test/fail?mode=503|429|hang|reset|down&for=S   (for defaults to 5)
    POST /_test/expire-tokens       AWS: every token issued so far becomes invalid (others: 400)
    POST /_test/identity?...        Azure: the identity platform's settings, each optional and
                                    kept until changed (they survive /_test/reset):
                                    lifetime=S (expires_in of every token, default 3600),
                                    jwt_lifetime=S (the token's own exp claim when it should
                                    end sooner than advertised: a revoked token; default the
                                    lifetime), tenant=T (default rr-tenant), client_id=C and
                                    client_secret=X (the service principal), federated=A (the
                                    assertion the workload identity must present), system=0|1
                                    (a system-assigned managed identity, default 1),
                                    user_assigned=ID (adds a user-assigned one)
    GET  /_test/state               counters and the emulated cloud's state
    POST /_test/reset               back to the initial state (events, counters, fail mode)

Only the Python 3 standard library is used (Python 3.11).
"""

import argparse
import base64
import email.utils
import hashlib
import http.server
import json
import os
import math
import re
import secrets
import signal
import socket
import struct
import sys
import threading
import time
import traceback
import uuid
from urllib.parse import parse_qs, urlsplit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from http_body import read_body  # noqa: E402

MAX_BODY = 1 << 20


# ---------------------------------------------------------------------------------------------
# Small helpers
# ---------------------------------------------------------------------------------------------

def rfc3339(ts):
    """AWS notice times: RFC 3339 UTC with a Z, e.g. 2017-09-18T08:22:00Z (P§1)."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


def rfc1123(ts):
    """Azure NotBefore: "Mon, 19 Sep 2016 18:29:47 GMT" (P§3)."""
    return email.utils.formatdate(ts, usegmt=True)


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


def aws_event_date(ts):
    """AWS scheduled-event dates: "21 Jan 2019 09:00:43 GMT", not RFC 3339 (P§1)."""
    t = time.gmtime(ts)
    return "%d %s %04d %02d:%02d:%02d GMT" % (t.tm_mday, _MONTHS[t.tm_mon - 1], t.tm_year,
                                            t.tm_hour, t.tm_min, t.tm_sec)


def log_time():
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + ".%03dZ" % int(now % 1 * 1000)


def to_json(obj, indent=None):
    return json.dumps(obj, indent=indent).encode()


class Reply:
    """One HTTP answer. body is bytes; headers a list of (name, value)."""

    def __init__(self, status, body=b"", ctype="text/plain", headers=None):
        self.status = status
        self.body = body.encode() if isinstance(body, str) else body
        self.ctype = ctype
        self.headers = list(headers or [])
        self.shows_announcement = False  # the answer carries the preemption notice


def json_reply(status, obj, headers=None):
    return Reply(status, to_json(obj), "application/json", headers)


class Request:
    def __init__(self, method, target, headers, body, role):
        parts = urlsplit(target)
        self.method = method
        self.target = target
        self.path = parts.path or "/"
        self.query = {k: v[0] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        self.headers = headers  # email.message.Message: case-insensitive get()
        self.body = body
        self.role = role        # "main" or "control"


class BadParam(Exception):
    pass


class Unsupported(Exception):
    """The cloud has no such control (e.g. rebalance on GCP)."""


def seconds_param(req, name, default, minimum=0.0, maximum=86400.0):
    raw = req.query.get(name)
    if raw is None or raw == "":
        return default
    try:
        v = float(raw)
    except ValueError:
        raise BadParam("%s must be a number of seconds, not %r" % (name, raw))
    if not math.isfinite(v) or v < minimum or v > maximum:
        raise BadParam("%s must be within %g..%g" % (name, minimum, maximum))
    return v


def tree_lookup(values, rel):
    """values maps leaf paths ("meta-data/placement/availability-zone") to strings. Returns
    ("leaf", value), ("dir", [children, subdirectories with a trailing /]) or (None, None).
    Directories exist only through their leaves, as in IMDS and the GCE metadata server."""
    if rel in values:
        return "leaf", values[rel]
    prefix = rel if rel == "" or rel.endswith("/") else rel + "/"
    children = []
    for key in values:
        if key.startswith(prefix) and key != prefix:
            rest = key[len(prefix):]
            name = rest.split("/", 1)[0] + ("/" if "/" in rest else "")
            if name not in children:
                children.append(name)
    if children:
        return "dir", children
    return None, None


# ---------------------------------------------------------------------------------------------
# The clouds. Every method runs with App.lock held unless it says otherwise; App.cond (on that
# lock) is notified by App after every state change, which wakes GCP's hanging GETs.
# ---------------------------------------------------------------------------------------------

class Cloud:
    name = ""
    server_header = ""

    def __init__(self, app):
        self.app = app
        self.reset()

    def reset(self):
        pass

    def on_announce(self, now):
        raise NotImplementedError

    def on_rebalance(self, now):
        raise Unsupported("rebalance recommendations exist only on AWS")

    def on_maintenance(self, now):
        raise NotImplementedError

    def on_expire_tokens(self):
        raise Unsupported("metadata tokens exist only on AWS (IMDSv2)")

    def handle(self, req):
        """Answers one non-/_test/ request; called WITHOUT the lock (GCP may block)."""
        raise NotImplementedError

    def state(self):
        return {}


# --------------------------------------- AWS (P§1, P§8) --------------------------------------

class AwsCloud(Cloud):
    name = "aws"
    server_header = "EC2ws"
    TTL_HEADER = "X-aws-ec2-metadata-token-ttl-seconds"
    TOKEN_HEADER = "X-aws-ec2-metadata-token"
    ROLE = "resume-run-role"

    def reset(self):
        # Tokens survive /_test/reset on purpose (a client holding one keeps working);
        # /_test/expire-tokens is the way to invalidate them.
        self.tokens = getattr(self, "tokens", {})   # token -> expiry (time.time())
        self.tokens_issued = 0
        self.unauthorized = 0
        self.spot_action = None       # {"action", "time"} once announced
        self.rebalance_notice = None  # {"noticeTime"} once signalled
        self.maintenance = []         # events/maintenance/scheduled entries
        self.creds_at = None

    # P§1: "Spot interruption ... Body {"action": "terminate", "time": ...}"; the notice comes
    # 2 minutes before the action, and its time is fixed when the notice appears.
    def on_announce(self, now):
        self.spot_action = {"action": "terminate", "time": rfc3339(now + 120)}

    # P§1: rebalance body {"noticeTime": "2020-10-27T08:22:00Z"}; 404 until emitted.
    def on_rebalance(self, now):
        self.rebalance_notice = {"noticeTime": rfc3339(now)}

    # P§1: a JSON array of {NotBefore, Code, Description, EventId, NotAfter, State},
    # dates like "21 Jan 2019 09:00:43 GMT".
    def on_maintenance(self, now):
        self.maintenance.append({
            "NotBefore": aws_event_date(now + 600),
            "Code": "system-reboot",
            "Description": "scheduled reboot",
            "EventId": "instance-event-0" + secrets.token_hex(8),
            "NotAfter": aws_event_date(now + 600 + 7200),
            "State": "active",
        })

    def on_expire_tokens(self):
        self.tokens.clear()

    def _credentials(self, now):
        # P§1 role credentials; new ones appear well before the old ones expire (6 h here).
        if self.creds_at is None or now > self.creds_at + 5 * 3600:
            self.creds_at = now
        return {
            "Code": "Success",
            "LastUpdated": rfc3339(self.creds_at),
            "Type": "AWS-HMAC",
            "AccessKeyId": "S3RVER",          # s3rver's account (P§8)
            "SecretAccessKey": "S3RVER",
            "Token": "imds-session-token",
            "Expiration": rfc3339(self.creds_at + 6 * 3600),
        }

    def _values(self, now):
        """The metadata tree under /latest/, as it is now."""
        v = {
            "meta-data/ami-id": "ami-0123456789abcdef0",
            "meta-data/hostname": "ip-10-0-0-12.ec2.internal",
            "meta-data/instance-id": "i-0123456789abcdef0",
            "meta-data/instance-life-cycle": "spot",
            "meta-data/instance-type": "g5.xlarge",
            "meta-data/local-ipv4": "10.0.0.12",
            "meta-data/placement/availability-zone": "us-east-1a",
            "meta-data/placement/region": "us-east-1",
            "meta-data/iam/info": json.dumps({
                "Code": "Success", "LastUpdated": rfc3339(now),
                "InstanceProfileArn": "arn:aws:iam::123456789012:instance-profile/" + self.ROLE,
                "InstanceProfileId": "AIPA0123456789EXAMPLE"}, indent=2),
            "meta-data/iam/security-credentials/" + self.ROLE:
                json.dumps(self._credentials(now), indent=2),
            # P§1: "[]"-style empty array until maintenance is scheduled.
            "meta-data/events/maintenance/scheduled": json.dumps(self.maintenance, indent=2),
            "dynamic/instance-identity/document": json.dumps({
                "accountId": "123456789012", "architecture": "x86_64",
                "availabilityZone": "us-east-1a", "imageId": "ami-0123456789abcdef0",
                "instanceId": "i-0123456789abcdef0", "instanceType": "g5.xlarge",
                "privateIp": "10.0.0.12", "region": "us-east-1", "version": "2017-09-30"},
                indent=2),
        }
        # P§1/P§8: instance-action, termination-time and rebalance are absent (404) until
        # the notice; termination-time is the legacy bare-text twin of instance-action.
        if self.spot_action:
            v["meta-data/spot/instance-action"] = json.dumps(self.spot_action)
            v["meta-data/spot/termination-time"] = self.spot_action["time"]
        if self.rebalance_notice:
            v["meta-data/events/recommendations/rebalance"] = json.dumps(self.rebalance_notice)
        return v

    def _issue_token(self, req):
        # P§1: a PUT carrying X-Forwarded-For is rejected (403).
        if req.headers.get("X-Forwarded-For") is not None:
            return Reply(403, "Forbidden")
        # P§1: only /latest/api/token; a versioned path such as /2021-03-23/api/token -> 403.
        if not req.path.startswith("/latest/"):
            return Reply(403, "Forbidden")
        # P§1 (AEMM tokengenerator.go): TTL header missing, not an integer, or outside
        # 1..21600 -> 400.
        raw = req.headers.get(self.TTL_HEADER)
        if raw is None or not re.fullmatch(r"\s*[0-9]+\s*", raw) or not 1 <= int(raw) <= 21600:
            return Reply(400, "Bad Request")
        ttl = int(raw)
        token = secrets.token_urlsafe(42)
        with self.app.lock:
            self.tokens[token] = time.time() + ttl
            self.tokens_issued += 1
        # P§1 (AEMM): the TTL header is echoed on success; the body is the token.
        return Reply(200, token, headers=[(self.TTL_HEADER, str(ttl))])

    def handle(self, req):
        path = req.path
        # The token endpoint: /<version>/api/token.
        if re.fullmatch(r"/[^/]+/api/token/?", path):
            if req.method == "PUT":
                return self._issue_token(req)
            return Reply(405, "Method Not Allowed", headers=[("Allow", "PUT")])
        # Another cloud's paths (GCP /computeMetadata/, Azure /metadata/) and anything outside
        # /latest/ are simply absent here, so auto-detection probes fail as on EC2.
        if path != "/latest" and not path.startswith("/latest/"):
            return Reply(404, "Not Found")
        # P§1: only GET and HEAD are allowed for metadata.
        if req.method not in ("GET", "HEAD"):
            return Reply(405, "Method Not Allowed", headers=[("Allow", "GET, HEAD")])
        now = time.time()
        with self.app.lock:
            # P§1 / P§8 (AEMM -I): IMDSv2 only; a GET without a valid, unexpired token -> 401.
            token = req.headers.get(self.TOKEN_HEADER)
            expiry = self.tokens.get(token) if token else None
            if expiry is None or expiry <= now:
                if expiry is not None:
                    del self.tokens[token]
                self.unauthorized += 1
                return Reply(401, "Unauthorized")
            # NTH reads the remaining TTL from GET responses too (P§1 "How NTH polls").
            ttl_hdr = [(self.TTL_HEADER, str(max(0, math.ceil(expiry - now))))]
            values = self._values(now)
        rel = path[len("/latest/"):] if path.startswith("/latest/") else ""
        if rel == "":
            return Reply(200, "dynamic\nmeta-data\n", headers=ttl_hdr)
        kind, value = tree_lookup(values, rel)
        if kind is None:
            return Reply(404, "Not Found", headers=ttl_hdr)   # P§1: 404 = resource absent
        body = value if kind == "leaf" else "\n".join(value)
        # P§1: all metadata is text/plain, JSON documents included.
        r = Reply(200, body, "text/plain", ttl_hdr)
        r.shows_announcement = rel.rstrip("/") in ("meta-data/spot/instance-action",
                                                   "meta-data/spot/termination-time")
        return r

    def state(self):
        now = time.time()
        return {
            "tokens_issued": self.tokens_issued,
            "tokens_valid": sum(1 for e in self.tokens.values() if e > now),
            "unauthorized_sent": self.unauthorized,   # 401s sent
            "unauthorized_401": self.unauthorized,    # the same, older name
            "spot_action": self.spot_action,
            "rebalance": self.rebalance_notice,
            "maintenance": self.maintenance,
        }


# ------------------------------------------ GCP (P§2) ----------------------------------------

class GcpCloud(Cloud):
    name = "gcp"
    server_header = "Metadata Server for VM"
    PREFIX = "/computeMetadata/v1/"

    def reset(self):
        self.preempted = False
        self.maintenance_event = "NONE"
        self.hanging_now = 0
        self.hanging_total = 0

    # P§2: instance/preempted answers TRUE or FALSE.
    def on_announce(self, now):
        self.preempted = True

    # P§2: maintenance-event is NONE, MIGRATE_ON_HOST_MAINTENANCE or
    # TERMINATE_ON_HOST_MAINTENANCE (the one k8s-node-termination-handler checks).
    def on_maintenance(self, now):
        self.maintenance_event = "TERMINATE_ON_HOST_MAINTENANCE"

    def _values(self):
        return {
            "instance/id": "4567890123456789012",
            "instance/name": "rr-vm-1",
            "instance/hostname": "rr-vm-1.us-central1-a.c.resume-run.internal",
            "instance/machine-type": "projects/123/machineTypes/a2-highgpu-1g",
            "instance/zone": "projects/123/zones/us-central1-a",
            "instance/preempted": "TRUE" if self.preempted else "FALSE",
            "instance/maintenance-event": self.maintenance_event,
            "instance/scheduling/provisioning-model": "SPOT",
            "instance/scheduling/on-host-maintenance": "TERMINATE",
            "instance/scheduling/automatic-restart": "FALSE",
            "instance/service-accounts/default/email":
                "resume-run@resume-run.iam.gserviceaccount.com",
            "instance/service-accounts/default/scopes":
                "https://www.googleapis.com/auth/cloud-platform",
            # P§2: access_token, expires_in (seconds), token_type "Bearer".
            "instance/service-accounts/default/token": json.dumps(
                {"access_token": os.environ.get("RR_TEST_GCP_TOKEN", "gcp-token"),
                 "expires_in": 3599, "token_type": "Bearer"}),
            "project/project-id": "resume-run",
            "project/numeric-project-id": "123",
        }

    def _resolve(self, rel):
        """(status, body, content type) of one path now. Lock held."""
        kind, value = tree_lookup(self._values(), rel)
        if kind is None:
            return 404, "Not Found", "text/html; charset=UTF-8"
        if kind == "dir":
            return 200, "\n".join(value) + "\n", "application/text"
        ctype = "application/json" if value.startswith("{") else "application/text"
        return 200, value, ctype

    @staticmethod
    def etag(body):
        # The ETag is a hash of the value, so it changes exactly when the value does.
        return hashlib.sha256(body.encode()).hexdigest()[:16]

    def handle(self, req):
        flavor = [("Metadata-Flavor", "Google")]
        # The server is read-only: an AWS token PUT (a wrong-cloud probe) -> 405.
        if req.method not in ("GET", "HEAD"):
            return Reply(405, "Method Not Allowed", headers=flavor + [("Allow", "GET, HEAD")])
        path = req.path
        if path == "/computeMetadata/v1":
            path += "/"
        if not path.startswith(self.PREFIX):
            return Reply(404, "Not Found", "text/html; charset=UTF-8", flavor)
        # P§2: requests must carry Metadata-Flavor: Google (else 403 with a text body).
        if req.headers.get("Metadata-Flavor") != "Google":
            return Reply(403, "Missing required header: Metadata-Flavor: Google\n",
                         "text/plain; charset=utf-8", flavor)
        rel = path[len(self.PREFIX):]
        wait = req.query.get("wait_for_change", "").lower() == "true"
        try:
            timeout = seconds_param(req, "timeout_sec", 60.0, minimum=0.0, maximum=3600.0)
        except BadParam as e:
            return Reply(400, str(e) + "\n", "text/plain; charset=utf-8", flavor)
        cond = self.app.cond
        with cond:
            status, body, ctype = self._resolve(rel)
            if status == 200 and wait:
                # P§2 hanging GET: answer at once when the current ETag differs from last_etag
                # (the samples start from "0" or "NONE"); otherwise block until the value
                # changes or timeout_sec passes (then: the unchanged value, 200). Without
                # last_etag: wait for the next change. Both are "not confirmed" in P§2.
                base = req.query.get("last_etag") or self.etag(body)
                deadline = time.monotonic() + timeout
                self.hanging_now += 1
                self.hanging_total += 1
                try:
                    while status == 200 and self.etag(body) == base:
                        left = deadline - time.monotonic()
                        if left <= 0:
                            break
                        cond.wait(left)
                        status, body, ctype = self._resolve(rel)
                finally:
                    self.hanging_now -= 1
        headers = list(flavor)
        if status == 200:
            headers.append(("ETag", self.etag(body)))
            if req.query.get("alt") == "json" and not ctype.startswith("application/json"):
                body, ctype = json.dumps(body), "application/json"
        r = Reply(status, body, ctype, headers)
        r.shows_announcement = status == 200 and rel == "instance/preempted" and "TRUE" in body
        return r

    def state(self):
        with self.app.lock:
            return {
                "preempted": self.preempted,
                "maintenance_event": self.maintenance_event,
                "etags": {k: self.etag(self._resolve(k)[1])
                          for k in ("instance/preempted", "instance/maintenance-event")},
                "hanging_gets_now": self.hanging_now,
                "hanging_gets_total": self.hanging_total,
            }


# ----------------------------------------- Azure (P§3) ---------------------------------------

SCHEDULED_EVENTS_VERSIONS = ("2017-03-01", "2017-08-01", "2017-11-01", "2019-01-01",
                             "2019-08-01", "2020-07-01")
INSTANCE_VERSIONS = ("2017-03-01", "2017-04-02", "2017-08-01", "2017-10-01", "2017-12-01",
                     "2018-02-01", "2018-04-02", "2018-10-01", "2019-02-01", "2019-03-11",
                     "2019-04-30", "2019-06-01", "2019-06-04", "2019-08-01", "2019-08-15",
                     "2019-11-01", "2020-06-01", "2020-07-15", "2020-09-01", "2020-10-01",
                     "2020-12-01", "2021-01-01", "2021-02-01", "2021-03-01", "2021-05-01",
                     "2021-10-01", "2021-11-01", "2021-11-15", "2021-12-13", "2023-07-01")
# P§3: Preempt was added in 2017-11-01 and Terminate in 2019-01-01; older versions omit them.
EVENT_TYPE_SINCE = {"Preempt": "2017-11-01", "Terminate": "2019-01-01"}


class AzureCloud(Cloud):
    name = "azure"
    server_header = "Microsoft-IIS/10.0"
    VM_NAME = "rr-vm-1"
    OTHER_VM = "rr-vm-2"
    VM_ID = "8f2b0c1e-5a4d-4c3b-9e7f-0123456789ab"

    def reset(self):
        if not hasattr(self, "identity"):
            self.identity = Identity()  # settings and tokens survive /_test/reset
        # P§3: DocumentIncarnation increases whenever the events change, so a reset that
        # clears events bumps it instead of going back to the start value.
        if getattr(self, "events", None):
            self.incarnation += 1
        elif not hasattr(self, "incarnation"):
            self.incarnation = 1
        self.events = []
        self.acks = []
        self.acks_rejected = []

    def _add(self, event_type, resources, not_before, description, duration):
        # P§3 schema: EventId, EventType, ResourceType, Resources, EventStatus, NotBefore,
        # Description, EventSource, DurationInSeconds (-1 = unknown).
        self.events.append({
            "EventId": str(uuid.uuid4()).upper(),
            "EventType": event_type,
            "ResourceType": "VirtualMachine",
            "Resources": resources,
            "EventStatus": "Scheduled",
            "NotBefore": rfc1123(not_before),
            "Description": description,
            "EventSource": "Platform",
            "DurationInSeconds": duration,
        })

    # P§3: Spot eviction is a Preempt event with 30 s minimum notice.
    def on_announce(self, now):
        self._add("Preempt", [self.VM_NAME], now + 30,
                  "Virtual machine is being evicted from Azure Spot.", -1)
        self.incarnation += 1

    # P§3: Reboot and Freeze have 15 min notice; events for the availability set reach every
    # VM in it, so a Freeze for ANOTHER VM is included and clients must check Resources.
    def on_maintenance(self, now):
        self._add("Reboot", [self.VM_NAME], now + 900,
                  "Virtual machine is going to be restarted as requested by platform.", -1)
        self._add("Freeze", [self.OTHER_VM], now + 900,
                  "Host server is undergoing maintenance.", 9)
        self.incarnation += 1

    def _instance_doc(self):
        return {
            "compute": {
                "azEnvironment": "AzurePublicCloud",
                "evictionPolicy": "Delete",
                "location": "eastus",
                "name": self.VM_NAME,
                "osType": "Linux",
                "priority": "Spot",
                "provider": "Microsoft.Compute",
                "resourceGroupName": "resume-run",
                "subscriptionId": "00000000-1111-2222-3333-444444444444",
                "tags": "",
                "vmId": self.VM_ID,
                "vmScaleSetName": "",
                "vmSize": "Standard_NC6s_v3",
                "zone": "1",
            },
            "network": {
                "interface": [{
                    "ipv4": {"ipAddress": [{"privateIpAddress": "10.0.0.4",
                                            "publicIpAddress": ""}],
                             "subnet": [{"address": "10.0.0.0", "prefix": "24"}]},
                    "ipv6": {"ipAddress": []},
                    "macAddress": "000D3A000001",
                }],
            },
        }

    @staticmethod
    def _error(status, message, extra=None):
        body = {"error": message}
        body.update(extra or {})
        return Reply(status, to_json(body), "application/json; charset=utf-8")

    def _api_version(self, req, known):
        v = req.query.get("api-version")
        if v is None or v == "":
            return None, self._error(
                400, "Bad request. api-version was not specified in the request. "
                     "For more information refer to aka.ms/azureimds",
                {"newest-versions": list(known[-3:][::-1])})
        if v not in known:
            return None, self._error(
                400, "Bad request. api-version is invalid or was not specified in the request. "
                     "For more information refer to aka.ms/azureimds",
                {"newest-versions": list(known[-3:][::-1])})
        return v, None

    def handle(self, req):
        # The Entra token endpoint (another host in Azure, this port here) has no header.
        m = re.match(r"^/([^/]+)/oauth2/v2\.0/token$", req.path)
        if m:
            with self.app.lock:
                return self.identity.authority(req, m.group(1))
        # P§3: without "Metadata: true" the service answers Bad Request. It is checked
        # first, so a wrong-cloud probe (an AWS token PUT, a GCP GET) gets 400 here.
        if (req.headers.get("Metadata") or "").lower() != "true":
            return self._error(400, "Bad request. Required metadata header not specified")
        path = req.path.rstrip("/")
        if path == "/metadata/scheduledevents":
            return self._scheduled_events(req)
        if path == "/metadata/instance" or path.startswith("/metadata/instance/"):
            return self._instance(req, path)
        if path == "/metadata/identity/oauth2/token":
            with self.app.lock:
                return self.identity.imds(req, self._api_version)
        return self._error(404, "Not found")

    def _scheduled_events(self, req):
        version, err = self._api_version(req, SCHEDULED_EVENTS_VERSIONS)  # P§3: mandatory
        if err:
            return err
        if req.method in ("GET", "HEAD"):
            with self.app.lock:
                events = [dict(e) for e in self.events
                          if version >= EVENT_TYPE_SINCE.get(e["EventType"], "")]
                doc = {"DocumentIncarnation": self.incarnation, "Events": events}
            r = Reply(200, to_json(doc), "application/json; charset=utf-8")
            r.shows_announcement = any(e["EventType"] == "Preempt" for e in events)
            return r
        if req.method == "POST":
            return self._start_requests(req)
        return self._error(405, "The requested method is not supported.")

    def _start_requests(self, req):
        # P§3: POST {"StartRequests":[{"EventId":"<id>"}]} -> 200 for any valid EventId, even
        # one already approved; 400 for a malformed payload. An approved event proceeds:
        # EventStatus "Started", NotBefore blank. (Unknown ids -> 400: not confirmed.)
        try:
            doc = json.loads(req.body.decode("utf-8"))
            reqs = doc["StartRequests"]
            if not isinstance(reqs, list):
                raise ValueError
            ids = [r["EventId"] for r in reqs]
            if not all(isinstance(i, str) for i in ids):
                raise ValueError
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            return self._error(400, "Bad request. The request body is not a valid "
                                    "StartRequests document.")
        with self.app.lock:
            known = {e["EventId"]: e for e in self.events}
            unknown = [i for i in ids if i not in known]
            if unknown:
                self.acks_rejected.extend(unknown)
                return self._error(400, "Bad request. Unknown EventId: " + ", ".join(unknown))
            changed = False
            for i in ids:
                self.acks.append(i)
                e = known[i]
                if e["EventStatus"] != "Started":
                    e["EventStatus"] = "Started"
                    e["NotBefore"] = ""
                    changed = True
            if changed:
                self.incarnation += 1
                self.app.cond.notify_all()
        return Reply(200, b"", "application/json; charset=utf-8")

    def _instance(self, req, path):
        _, err = self._api_version(req, INSTANCE_VERSIONS)
        if err:
            return err
        if req.method not in ("GET", "HEAD"):
            return self._error(405, "The requested method is not supported.")
        node = self._instance_doc()
        for part in [p for p in path[len("/metadata/instance"):].split("/") if p]:
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return self._error(404, "Not found")
        if req.query.get("format") == "text" and not isinstance(node, (dict, list)):
            return Reply(200, str(node), "text/plain; charset=utf-8")
        return Reply(200, to_json(node), "application/json; charset=utf-8")

    def state(self):
        return dict({"incarnation": self.incarnation, "events": self.events,
                     "acks": self.acks, "acks_rejected": self.acks_rejected,
                     "tokens_issued": len(self.identity.issued)}, **self.identity.state())



# ------------------------ Azure identity: managed identity and Entra ID (P§9) ----------------

IDENTITY_VERSIONS = ("2018-02-01", "2019-08-01")
STORAGE_SCOPE = "https://storage.azure.com/.default"


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Identity:
    """The tokens an Azure VM's managed identity (IMDS) and the Entra token endpoint hand
    out: JWTs with the claims Azure Storage checks (aud, iss https://sts.windows.net/TENANT/,
    iat, nbf, exp; Azurite's OAuth "basic" mode checks exactly these and not the signature,
    which is random bytes here). Each token carries its serial number (claim rr_n) so a test
    can tell them apart; the state lists every token issued, never its value."""

    def __init__(self):
        self.lifetime = 3600
        self.jwt_lifetime = None
        self.tenant = "rr-tenant"
        self.client_id = "rr-app"
        self.client_secret = None
        self.federated = []
        self.system = True
        self.user_assigned = []
        self.issued = []
        self.refused = []

    def configure(self, req):
        q = req.query
        if "lifetime" in q:
            self.lifetime = int(seconds_param(req, "lifetime", 3600, 1, 86400))
        if "jwt_lifetime" in q:
            self.jwt_lifetime = int(seconds_param(req, "jwt_lifetime", 0, 1, 86400))
        for k in ("tenant", "client_id", "client_secret"):
            if k in q:
                setattr(self, k, q[k] or None)
        if "federated" in q:
            self.federated = [a for a in q["federated"].split(",") if a]
        if "system" in q:
            self.system = q["system"] == "1"
        if q.get("user_assigned"):
            self.user_assigned.append(q["user_assigned"])
        return {"lifetime": self.lifetime, "jwt_lifetime": self.jwt_lifetime,
                "tenant": self.tenant, "client_id": self.client_id,
                "system": self.system, "user_assigned": self.user_assigned}

    def issue(self, flow, client_id, audience, assertion=None):
        now = int(time.time())
        n = len(self.issued) + 1
        jwt_exp = now + (self.jwt_lifetime or self.lifetime)
        header = {"typ": "JWT", "alg": "RS256", "kid": "rr-test"}
        claims = {"aud": audience, "iss": "https://sts.windows.net/%s/" % self.tenant,
                  "iat": now, "nbf": now, "exp": jwt_exp, "appid": client_id,
                  "oid": str(uuid.uuid5(uuid.NAMESPACE_URL, client_id)), "sub": client_id,
                  "tid": self.tenant, "ver": "1.0", "rr_n": n}
        token = ".".join((b64url(to_json(header)), b64url(to_json(claims)),
                          b64url(secrets.token_bytes(32))))
        self.issued.append({"n": n, "flow": flow, "client_id": client_id, "at": time.time(),
                            "expires_on": now + self.lifetime, "jwt_exp": jwt_exp,
                            "assertion_sha256": hashlib.sha256(assertion.encode()).hexdigest()
                            if assertion else None})
        return token, now

    def refuse(self, flow, status, error, description):
        self.refused.append({"flow": flow, "status": status, "error": error,
                             "at": time.time()})
        return json_reply(status, {"error": error, "error_description": description})

    # IMDS ("How to use managed identities ... to acquire an access token"): GET with
    # Metadata: true, api-version, resource, and client_id for a user-assigned identity;
    # every value of the answer is a string.
    def imds(self, req, version_check):
        _, err = version_check(req, IDENTITY_VERSIONS)
        if err:
            return err
        if req.method != "GET":
            return AzureCloud._error(405, "The requested method is not supported.")
        resource = req.query.get("resource", "")
        if not resource:
            return self.refuse("imds", 400, "invalid_request",
                               "Required query variable 'resource' is missing")
        client_id = req.query.get("client_id")
        if client_id is not None and client_id not in self.user_assigned:
            return self.refuse("imds", 400, "invalid_request", "Identity not found")
        if client_id is None and not self.system:
            return self.refuse("imds", 400, "invalid_request", "Identity not found")
        who = client_id or "system-assigned"
        token, now = self.issue("imds", who, resource.rstrip("/"))
        return json_reply(200, {"access_token": token, "client_id": who,
                                "expires_in": str(self.lifetime),
                                "expires_on": str(now + self.lifetime),
                                "ext_expires_in": str(self.lifetime),
                                "not_before": str(now), "resource": resource,
                                "token_type": "Bearer"})

    # The client credentials flow ("Microsoft identity platform and the OAuth 2.0 client
    # credentials flow"): a form POST to /TENANT/oauth2/v2.0/token.
    def authority(self, req, tenant):
        if req.method != "POST":
            return self.refuse("authority", 405, "invalid_request", "POST only")
        try:
            form = {k: v[0] for k, v in
                    parse_qs(req.body.decode("ascii"), keep_blank_values=True).items()}
        except UnicodeDecodeError:
            form = {}
        flow = "workload" if "client_assertion" in form else "secret"
        if tenant != self.tenant:
            return self.refuse(flow, 400, "invalid_request",
                               "AADSTS90002: Tenant '%s' not found." % tenant)
        if form.get("grant_type") != "client_credentials" or \
                form.get("scope") != STORAGE_SCOPE:
            return self.refuse(flow, 400, "invalid_request",
                               "AADSTS900144: grant_type client_credentials and scope %s "
                               "expected" % STORAGE_SCOPE)
        if form.get("client_id") != self.client_id:
            return self.refuse(flow, 400, "unauthorized_client",
                               "AADSTS700016: Application not found in the directory.")
        if flow == "workload":
            if form.get("client_assertion_type") != \
                    "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" or \
                    form["client_assertion"] not in self.federated:
                return self.refuse(flow, 400, "invalid_client",
                                   "AADSTS70021: No matching federated identity record "
                                   "found for presented assertion.")
        elif self.client_secret is None or form.get("client_secret") != self.client_secret:
            return self.refuse(flow, 401, "invalid_client",
                               "AADSTS7000215: Invalid client secret provided.")
        token, _ = self.issue(flow, self.client_id, "https://storage.azure.com",
                              form.get("client_assertion"))
        return json_reply(200, {"token_type": "Bearer", "expires_in": self.lifetime,
                                "ext_expires_in": self.lifetime, "access_token": token})

    def state(self):
        return {"identity_tokens": list(self.issued), "identity_refused": list(self.refused)}


CLOUDS = {"aws": AwsCloud, "gcp": GcpCloud, "azure": AzureCloud}


# ---------------------------------------------------------------------------------------------
# The application: shared state, scheduling, fail modes and the /_test/ control API
# ---------------------------------------------------------------------------------------------

FAIL_MODES = ("503", "429", "hang", "reset", "down")


class App:
    def __init__(self, cloud_name, host):
        self.lock = threading.RLock()
        self.cond = threading.Condition(self.lock)
        self.listener_ctl = threading.Lock()   # orders fail-mode changes with listener up/down
        self.host = host
        self.main = None       # Listener for the cloud port
        self.control = None    # Listener for the control port
        self.gen = 0           # bumped by reset: cancels scheduled changes
        self.timers = []
        self.fail = None       # {"mode", "since", "until"}
        self.fail_gen = 0
        self.cloud = CLOUDS[cloud_name](self)
        self._clear_stats()

    def _clear_stats(self):
        self.counters = {}     # path -> method -> n
        self.statuses = {}     # path -> status -> n
        self.requests_total = 0
        self.announced_at = None
        self.announce_visible_at = None
        self.announce_observed_at = None
        self.rebalance_at = None
        self.maintenance_at = None

    # -- bookkeeping ---------------------------------------------------------------------------

    def count(self, req, status, shows_announcement=False):
        with self.lock:
            self.requests_total += 1
            m = self.counters.setdefault(req.path, {})
            m[req.method] = m.get(req.method, 0) + 1
            s = self.statuses.setdefault(req.path, {})
            s[str(status)] = s.get(str(status), 0) + 1
            if shows_announcement and self.announced_at is not None \
                    and self.announce_observed_at is None:
                self.announce_observed_at = time.time()

    def schedule(self, delay, apply):
        """Runs apply(now) with the lock held, now (delay <= 0) or after delay seconds unless
        /_test/reset comes first; then wakes every waiter (GCP hanging GETs)."""
        if delay <= 0:
            with self.cond:
                apply(time.time())
                self.cond.notify_all()
            return
        gen = self.gen

        def run():
            with self.cond:
                if self.gen != gen:
                    return
                apply(time.time())
                self.cond.notify_all()

        t = threading.Timer(delay, run)
        t.daemon = True
        with self.lock:
            self.timers = [x for x in self.timers if x.is_alive()] + [t]
        t.start()

    # -- fail modes ----------------------------------------------------------------------------

    def current_fail(self):
        with self.lock:
            if self.fail and time.time() < self.fail["until"]:
                return self.fail["mode"]
            return None

    def is_down(self):
        return self.current_fail() == "down"

    def wait_fail_over(self):
        """Blocks a 'hang' request until its fail period ends or is replaced/reset."""
        with self.cond:
            gen = self.fail_gen
            while self.fail_gen == gen and self.fail:
                left = self.fail["until"] - time.time()
                if left <= 0:
                    break
                self.cond.wait(left)

    def set_fail(self, mode, duration):
        with self.listener_ctl:
            with self.cond:
                self.fail_gen += 1
                gen = self.fail_gen
                now = time.time()
                self.fail = {"mode": mode, "since": now, "until": now + duration}
                self.cond.notify_all()   # ends an earlier hang period
            if mode == "down":
                # "down": the listening socket closes (connections are refused) and reopens
                # on the same port when the period ends. The control port stays up.
                self.main.down()
                threading.Thread(target=self._down_worker, args=(gen,), daemon=True).start()
            else:
                self.main.up()

    def _down_worker(self, gen):
        with self.cond:
            while self.fail_gen == gen and time.time() < self.fail["until"]:
                self.cond.wait(self.fail["until"] - time.time())
        with self.listener_ctl:
            with self.lock:
                if self.fail_gen != gen:
                    return   # replaced or reset: whoever did it owns the listener now
                self.fail = None
            self.main.up()

    def reset(self):
        with self.listener_ctl:
            with self.cond:
                self.gen += 1
                for t in self.timers:
                    t.cancel()
                self.timers = []
                self.fail = None
                self.fail_gen += 1
                self.cloud.reset()
                self._clear_stats()
                self.cond.notify_all()
            self.main.up()

    # -- the /_test/ API -----------------------------------------------------------------------

    def control_request(self, req):
        name = req.path[len("/_test/"):].strip("/")
        if name == "state":
            if req.method not in ("GET", "HEAD"):
                return json_reply(405, {"error": "use GET"}, [("Allow", "GET, HEAD")])
            return json_reply(200, self.state())
        handler = {
            "announce": self._ctl_announce,
            "rebalance": self._ctl_rebalance,
            "maintenance": self._ctl_maintenance,
            "fail": self._ctl_fail,
            "expire-tokens": self._ctl_expire_tokens,
            "identity": self._ctl_identity,
            "reset": self._ctl_reset,
        }.get(name)
        if handler is None:
            return json_reply(404, {"error": "unknown control " + req.path})
        if req.method != "POST":
            return json_reply(405, {"error": "use POST"}, [("Allow", "POST")])
        try:
            return json_reply(200, dict({"ok": True, "cloud": self.cloud.name}, **handler(req)))
        except BadParam as e:
            return json_reply(400, {"ok": False, "error": str(e)})
        except Unsupported as e:
            return json_reply(400, {"ok": False, "error": str(e)})

    def _ctl_announce(self, req):
        delay = seconds_param(req, "in", 0.0)
        visible = time.time() + delay

        def apply(now):
            self.cloud.on_announce(now)
            self.announced_at = now            # when the notice became visible
            self.announce_observed_at = None   # first answer carrying it (set by count())

        with self.lock:
            self.announce_visible_at = visible
        self.schedule(delay, apply)
        return {"visible_at": visible}

    def _ctl_rebalance(self, req):
        delay = seconds_param(req, "in", 0.0)
        if not isinstance(self.cloud, AwsCloud):
            raise Unsupported("rebalance recommendations exist only on AWS")

        def apply(now):
            self.cloud.on_rebalance(now)
            self.rebalance_at = now

        self.schedule(delay, apply)
        return {"visible_at": time.time() + delay}

    def _ctl_maintenance(self, req):
        delay = seconds_param(req, "in", 0.0)

        def apply(now):
            self.cloud.on_maintenance(now)
            self.maintenance_at = now

        self.schedule(delay, apply)
        return {"visible_at": time.time() + delay}

    def _ctl_fail(self, req):
        mode = req.query.get("mode", "")
        if mode not in FAIL_MODES:
            raise BadParam("mode must be one of " + "|".join(FAIL_MODES))
        duration = seconds_param(req, "for", 5.0, minimum=0.0, maximum=3600.0)
        self.set_fail(mode, duration)
        return {"mode": mode, "until": self.fail["until"] if self.fail else None}

    def _ctl_expire_tokens(self, req):
        with self.lock:
            self.cloud.on_expire_tokens()
        return {}

    def _ctl_identity(self, req):
        if not isinstance(self.cloud, AzureCloud):
            raise Unsupported("managed identities and Entra tokens exist only on Azure here")
        with self.lock:
            return self.cloud.identity.configure(req)

    def _ctl_reset(self, req):
        self.reset()
        return {}

    def state(self):
        with self.lock:
            fail = None
            if self.fail and time.time() < self.fail["until"]:
                fail = dict(self.fail)
            s = {
                "cloud": self.cloud.name,
                "now": time.time(),
                "port": self.main.port if self.main else None,
                "control_port": self.control.port if self.control else None,
                "listening": bool(self.main and self.main.server),
                "fail": fail,
                "requests_total": self.requests_total,
                "counters": self.counters,
                "statuses": self.statuses,
                "announced_at": self.announced_at,
                "announce_visible_at": self.announce_visible_at,
                "announce_observed_at": self.announce_observed_at,
                "rebalance_at": self.rebalance_at,
                "maintenance_at": self.maintenance_at,
                # Common keys, filled in by the cloud where they apply.
                "tokens_issued": 0,
                "unauthorized_sent": 0,
                "unauthorized_401": 0,
                "acks": [],
                "incarnation": None,
            }
            s.update(self.cloud.state())
            return json.loads(json.dumps(s))   # a deep copy, safe to serialize later


# ---------------------------------------------------------------------------------------------
# HTTP plumbing
# ---------------------------------------------------------------------------------------------

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"   # keep-alive; every answer has a Content-Length

    def version_string(self):
        return self.server.app.cloud.server_header

    def log_request(self, code="-", size="-"):
        status = code.value if hasattr(code, "value") else code
        sys.stderr.write("%s %s %s -> %s\n" % (log_time(), self.command or "-",
                                               self.path if hasattr(self, "path") else "-",
                                               status))
        sys.stderr.flush()

    def log_message(self, fmt, *args):
        sys.stderr.write("%s %s\n" % (log_time(), fmt % args))
        sys.stderr.flush()

    def _read_body(self):
        """The request body (Content-Length or chunked), or None after answering an error."""
        return read_body(self, MAX_BODY, self._plain_error)

    def _plain_error(self, status, text):
        self.close_connection = True
        self._send(Reply(status, text + "\n"), extra=[("Connection", "close")])

    def _send(self, reply, extra=()):
        self.send_response(reply.status)
        if reply.ctype:
            self.send_header("Content-Type", reply.ctype)
        self.send_header("Content-Length", str(len(reply.body)))
        for k, v in list(reply.headers) + list(extra):
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD" and reply.body:
            self.wfile.write(reply.body)

    def _reset_connection(self, why):
        """Answer nothing and reset the TCP connection (RST, via SO_LINGER 0)."""
        sys.stderr.write("%s %s %s -> %s\n" % (log_time(), self.command, self.path, why))
        self.close_connection = True
        try:
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                       struct.pack("ii", 1, 0))
            self.connection.close()
        except OSError:
            pass

    def _dispatch(self):
        app = self.server.app
        role = self.server.role
        body = self._read_body()
        if body is None:
            return
        req = Request(self.command, self.path, self.headers, body, role)
        # A connection accepted before "down" started behaves like one to a dead service.
        if role == "main" and app.is_down():
            app.count(req, "reset")
            self._reset_connection("reset (down)")
            return
        if req.path.startswith("/_test/"):
            self._send(app.control_request(req))
            return
        if role == "control":
            self._send(json_reply(404, {"error": "the control port serves /_test/ only"}))
            return
        mode = app.current_fail()
        if mode == "503":
            app.count(req, 503)
            self._send(Reply(503, "Service Unavailable\n"))
        elif mode == "429":
            app.count(req, 429)
            self._send(Reply(429, "Too Many Requests\n", headers=[("Retry-After", "1")]))
        elif mode == "hang":
            app.count(req, "hang")
            app.wait_fail_over()
            sys.stderr.write("%s %s %s -> hang, closed\n" % (log_time(), req.method, req.target))
            self.close_connection = True   # the period is over: close without an answer
        elif mode == "reset":
            app.count(req, "reset")
            self._reset_connection("reset")
        else:
            try:
                reply = app.cloud.handle(req)
            except Exception:
                traceback.print_exc()
                reply = Reply(500, "Internal Server Error\n")
            app.count(req, reply.status, reply.shows_announcement)
            self._send(reply)

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _dispatch


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, app, role):
        self.app = app
        self.role = role
        if ":" in addr[0]:
            self.address_family = socket.AF_INET6
        super().__init__(addr, Handler)

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError, OSError)):
            return   # a client that went away, or a connection we reset on purpose
        super().handle_error(request, client_address)


class Listener:
    """One listening port that can be closed and reopened on the same port ("down")."""

    def __init__(self, app, role, host, port):
        self.app, self.role, self.host, self.port = app, role, host, port
        self.server = None
        self.lock = threading.Lock()

    def up(self):
        with self.lock:
            if self.server:
                return
            deadline = time.time() + 10
            while True:
                try:
                    srv = Server((self.host, self.port), self.app, self.role)
                    break
                except OSError as e:
                    if time.time() > deadline:
                        sys.stderr.write("%s cannot reopen port %s: %s\n"
                                         % (log_time(), self.port, e))
                        return
                    time.sleep(0.05)
            self.port = srv.server_address[1]
            self.server = srv
            threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1},
                             daemon=True).start()

    def down(self):
        with self.lock:
            srv, self.server = self.server, None
            if srv:
                srv.shutdown()
                srv.server_close()


def main(argv=None):
    ap = argparse.ArgumentParser(description="Cloud metadata test server (one cloud).")
    ap.add_argument("--cloud", required=True, choices=sorted(CLOUDS))
    ap.add_argument("--port", type=int, required=True, help="0 picks a free port")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--control-port", type=int, default=0,
                    help="port of the /_test/ control API (default: a free one)")
    args = ap.parse_args(argv)

    app = App(args.cloud, args.host)
    app.control = Listener(app, "control", args.host, args.control_port)
    app.main = Listener(app, "main", args.host, args.port)
    app.control.up()
    app.main.up()
    if not app.control.server or not app.main.server:
        return 1
    # One write, so a reader that sees either line already has both.
    sys.stdout.write("control %d\nready %d\n" % (app.control.port, app.main.port))
    sys.stdout.flush()

    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    while not stop.wait(1):
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
