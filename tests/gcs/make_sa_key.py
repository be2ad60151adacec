#!/usr/bin/python3
"""Prints a Google service-account key file (JSON) with a fresh 2048-bit RSA key whose
token_uri is the GCS test server's token endpoint: http://127.0.0.1:PORT/token, or the URL
given (tests/gcs/server.py --key-file checks the JWTs it signs). One per test: the key is
made anew each time.

usage: make_sa_key.py PORT|TOKEN_URL > sa.json"""
import json
import sys

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                        serialization.NoEncryption()).decode()
print(json.dumps({"type": "service_account", "project_id": "rr-test", "private_key_id": "k1",
                  "private_key": pem, "client_email": "trainer@rr-test.iam.gserviceaccount.com",
                  "token_uri": sys.argv[1] if "://" in sys.argv[1]
                  else f"http://127.0.0.1:{sys.argv[1]}/token"}))
