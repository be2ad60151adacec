#!/usr/bin/python3
"""Sends a signed S3 PUT whose body stops short: the request head (Content-Length: the whole
file's size, SigV4 with UNSIGNED-PAYLOAD, signed by botocore) and the first CUT bytes of
FILE, then closes the connection. An atomic store (S3) keeps nothing; s3rver 5.0.0 keeps
the truncated object, as some S3-compatible gateways do.

usage: partial_put.py ENDPOINT BUCKET KEY FILE CUT   (credentials from AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_REGION)"""
import os
import socket
import sys
import time
import urllib.parse

from botocore.auth import S3SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

endpoint, bucket, key, path, cut = sys.argv[1:6]
body = open(path, "rb").read()
url = "%s/%s/%s" % (endpoint.rstrip("/"), bucket, key)
req = AWSRequest(method="PUT", url=url, data=b"",
                 headers={"Content-Length": str(len(body)),
                          "x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
S3SigV4Auth(Credentials(os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"]),
            "s3", os.environ.get("AWS_REGION", "us-east-1")).add_auth(req)
u = urllib.parse.urlsplit(url)
head = "PUT %s HTTP/1.1\r\nHost: %s\r\n" % (u.path, u.netloc)
head += "".join("%s: %s\r\n" % (k, v) for k, v in req.headers.items() if k.lower() != "host")
with socket.create_connection((u.hostname, u.port)) as s:
    s.sendall(head.encode() + b"\r\n" + body[:int(cut)])
    time.sleep(0.3)
    s.shutdown(socket.SHUT_WR)
    time.sleep(0.3)
