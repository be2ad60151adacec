#!/usr/bin/python3
"""Our GCS XML API front (tests/gcs/server.py) side by side with fake-gcs-server, a GCS
emulator others maintain, on the XML API requests the GCS store makes. Each case sends the
same request to both and compares what the store relies on. Where they differ, the
difference must be one listed in KNOWN, with the reason and which side matches Google's
documentation; an unlisted difference, or a listed one that no longer shows, fails.

usage: compare_fake_gcs.py OURS_BASE FAKE_BASE BUCKET TOKEN
(bases are http://127.0.0.1:PORT; both serve BUCKET, path-style; TOKEN is a bearer token our
front accepts). fake-gcs-server takes no XML PUT, so its objects are put with its JSON API.
Prints one line per case; exits 1 on a failure. Python 3 standard library only."""
import hashlib
import http.client
import re
import sys
from urllib.parse import quote, urlsplit

# Differences found, with which side the documentation backs (docs.cloud.google.com/storage/
# docs/xml-api/...; "ours" = tests/gcs/server.py). Each case id -> reason.
KNOWN = {
    "put": "fake-gcs-server takes an XML PUT only with a signed URL or a form (400 'invalid "
           "uploadType'); GCS: put-object. Ours right; the store's writes stay with our front",
    "put-create-only": "the same: no XML PUT, so no x-goog-if-generation-match: 0 either "
                       "(GCS: 412 on an existing object). Ours right",
    "multipart": "no XML multipart upload (POST ?uploads answers 400); GCS: "
                 "post-object-multipart. Ours right",
    "get-generation-mismatch": "fake-gcs-server ignores x-goog-if-generation-match on GET "
                               "and answers 200; GCS: get-object, 412. Ours right",
    "delete": "fake-gcs-server answers DELETE with 200 and a JSON body; GCS: delete-object, "
              "204 No Content. Ours right (the store takes both)",
    "list-is-truncated": "fake-gcs-server's ListBucketResult has no IsTruncated; S3's and "
                         "GCS's listings always carry it. Ours right; the store refuses a "
                         "listing without it (a partial listing taken whole could let gc delete "
                         "live chunks), so it cannot read a run from fake-gcs-server",
    "list-max-keys": "fake-gcs-server ignores max-keys and continuation tokens (one page of "
                     "everything); GCS pages. Ours right",
    "missing-error-body": "fake-gcs-server's 404 bodies are text or JSON; GCS's XML API "
                          "answers <Error><Code>NoSuchKey</Code>. Ours right",
    "etag": "fake-gcs-server's ETag is the base64 MD5 (the JSON API's md5Hash); the XML API's "
            "ETag of a non-composite object is the hex MD5, as S3's. Ours right",
}


class Side:
    def __init__(self, base, bucket, token):
        u = urlsplit(base)
        self.host, self.port, self.bucket, self.token = u.hostname, u.port, bucket, token

    def req(self, method, key="", query="", headers=None, body=b""):
        c = http.client.HTTPConnection(self.host, self.port, timeout=30)
        path = "/" + self.bucket + ("/" + quote(key) if key else "") + (("?" + query) if query else "")
        h = {"Authorization": "Bearer " + self.token, "Content-Length": str(len(body))}
        h.update(headers or {})
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        hdrs = {k.lower(): v for k, v in r.getheaders()}
        c.close()
        return r.status, hdrs, data


def seed(ours, fake, key, data):
    s, _, b = ours.req("PUT", key, body=data)
    assert s == 200, "our front refused the PUT of %s: %d %r" % (key, s, b[:200])
    c = http.client.HTTPConnection(fake.host, fake.port, timeout=30)
    c.request("POST", "/upload/storage/v1/b/%s/o?uploadType=media&name=%s" % (fake.bucket, quote(key, safe="")),
              body=data, headers={"Content-Type": "application/octet-stream"})
    r = c.getresponse()
    r.read()
    assert r.status == 200, "fake-gcs-server refused the JSON upload of %s: %d" % (key, r.status)


def tag(xml, name):
    return re.findall(r"<%s>([^<]*)</%s>" % (name, name), xml.decode("utf-8", "replace"))


def main():
    ours, fake = Side(*sys.argv[1:2], *sys.argv[3:5]), Side(sys.argv[2], *sys.argv[3:5])
    data = bytes(range(256)) * 40
    md5 = hashlib.md5(data).hexdigest()
    seed(ours, fake, "cmp/a/obj1", data)
    seed(ours, fake, "cmp/a/obj2", b"second")
    results = []   # (id, agree, what ours did, what fake did)

    def case(cid, f):
        o, k = f(ours), f(fake)
        results.append((cid, o == k, o, k))

    # What the store relies on when reading.
    case("get", lambda s: (lambda r: (r[0], r[2] == data, "x-goog-generation" in r[1]))(s.req("GET", "cmp/a/obj1")))
    case("etag", lambda s: s.req("HEAD", "cmp/a/obj1")[1].get("etag", "").strip('"') == md5)
    case("range", lambda s: (lambda r: (r[0], r[1].get("content-range"), r[2] == data[2:6]))(
        s.req("GET", "cmp/a/obj1", headers={"Range": "bytes=2-5"})))
    case("head", lambda s: (lambda r: (r[0], r[1].get("content-length")))(s.req("HEAD", "cmp/a/obj1")))
    case("get-missing", lambda s: s.req("GET", "cmp/nothing")[0])
    case("head-missing", lambda s: s.req("HEAD", "cmp/nothing")[0])
    case("missing-error-body", lambda s: tag(s.req("GET", "cmp/nothing")[2], "Code"))
    case("get-generation-mismatch", lambda s: s.req("GET", "cmp/a/obj1", headers={"x-goog-if-generation-match": "1"})[0])
    # Listing.
    case("list", lambda s: (lambda r: (r[0], sorted(zip(tag(r[2], "Key"), tag(r[2], "Size")))))(
        s.req("GET", query="list-type=2&prefix=cmp/a/")))
    case("list-is-truncated", lambda s: tag(s.req("GET", query="list-type=2&prefix=cmp/a/")[2], "IsTruncated"))
    case("list-max-keys", lambda s: len(tag(s.req("GET", query="list-type=2&prefix=cmp/a/&max-keys=1")[2], "Key")))
    # Writes.
    case("put", lambda s: s.req("PUT", "cmp/b/new", body=b"new")[0])
    case("put-create-only", lambda s: s.req("PUT", "cmp/a/obj2", headers={"x-goog-if-generation-match": "0"}, body=b"x")[0])
    case("multipart", lambda s: s.req("POST", "cmp/b/mp", query="uploads")[0])
    case("delete", lambda s: s.req("DELETE", "cmp/a/obj2")[0])
    case("delete-missing", lambda s: s.req("DELETE", "cmp/a/obj2")[0])
    case("gone-after-delete", lambda s: s.req("HEAD", "cmp/a/obj2")[0])

    failed = 0
    for cid, agree, o, k in results:
        if agree and cid in KNOWN:
            print("FAIL %-24s agree now (%r); the listed difference is gone: %s" % (cid, o, KNOWN[cid]))
            failed += 1
        elif agree:
            print("same %-24s %r" % (cid, o))
        elif cid in KNOWN:
            print("diff %-24s ours %r, fake-gcs-server %r: %s" % (cid, o, k, KNOWN[cid]))
        else:
            print("FAIL %-24s ours %r, fake-gcs-server %r: an unlisted difference" % (cid, o, k))
            failed += 1
    same = sum(1 for r in results if r[1])
    print("%d cases: %d the same, %d known differences, %d failed"
          % (len(results), same, len(results) - same - failed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
