"""Reads a run the agent wrote with a cloud's own SDK (run with the venv of
tests/thirdparty/install.sh): lists the run's objects, reads LATEST and the manifest it names,
and checks that every chunk the manifest names is among the objects listed (DESIGN.md §4: a
checkpoint is committed when its manifest and every chunk it names exist).

usage: sdk_read_back.py s3 BUCKET PREFIX     (boto3; AWS_ENDPOINT_URL and the AWS_* keys)
       sdk_read_back.py gcs BUCKET PREFIX    (google-cloud-storage; STORAGE_EMULATOR_HOST)
PREFIX is the run's, e.g. runs/default/. Prints one summary line; exits 1 with the reason
when something is missing or malformed."""
import json
import os
import sys


def s3_reader(bucket, prefix):
    import boto3
    s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
    names = []
    # Small pages, so that continuation tokens are used on any real run.
    pages = s3.get_paginator("list_objects_v2").paginate(
        Bucket=bucket, Prefix=prefix, PaginationConfig={"PageSize": 7})
    for page in pages:
        names += [o["Key"] for o in page.get("Contents", [])]
    return ("boto3 " + boto3.__version__, names,
            lambda key: s3.get_object(Bucket=bucket, Key=key)["Body"].read())


def gcs_reader(bucket, prefix):
    from google.api_core.client_options import ClientOptions
    from google.auth.credentials import AnonymousCredentials
    from google.cloud import storage
    host = os.environ["STORAGE_EMULATOR_HOST"]
    client = storage.Client(project="rr-test", credentials=AnonymousCredentials(),
                            client_options=ClientOptions(api_endpoint=host))
    b = client.bucket(bucket)
    names = [blob.name for blob in client.list_blobs(bucket, prefix=prefix, page_size=7)]
    return ("google-cloud-storage " + storage.__version__, names,
            lambda key: b.blob(key).download_as_bytes())


def chunk_hashes(node, out):
    """Every sha256 of a chunk list anywhere in the manifest (files, tensors, packs)."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "chunks" and isinstance(v, list):
                out.update(c["sha256"] for c in v if isinstance(c, dict) and "sha256" in c)
            else:
                chunk_hashes(v, out)
    elif isinstance(node, list):
        for v in node:
            chunk_hashes(v, out)
    return out


def main():
    kind, bucket, prefix = sys.argv[1:4]
    sdk, names, read = (s3_reader if kind == "s3" else gcs_reader)(bucket, prefix)
    listed = set(names)
    if len(listed) != len(names):
        raise SystemExit("%s listed some objects twice" % sdk)
    latest = json.loads(read(prefix + "LATEST"))
    name = latest["checkpoint"]
    key = "%scheckpoints/%s/manifest.json" % (prefix, name)
    if key not in listed:
        raise SystemExit("%s: LATEST names %s but %s is not listed" % (sdk, name, key))
    manifest = json.loads(read(key))
    hashes = chunk_hashes(manifest, set())
    missing = [h for h in hashes if "%schunks/%s/%s" % (prefix, h[:2], h) not in listed]
    if not hashes or missing:
        raise SystemExit("%s: manifest of %s names %d chunks, %d not listed (%s)"
                         % (sdk, name, len(hashes), len(missing), missing[:3]))
    print("%s: %d objects listed; LATEST -> %s; its manifest: %d files, %d chunks, all listed"
          % (sdk, len(names), name, len(manifest.get("files", [])), len(hashes)))


if __name__ == "__main__":
    main()
