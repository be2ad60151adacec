#!/usr/bin/env bash
# GCS against fake-gcs-server v1.56.1 (a GCS emulator others maintain, built from the Go
# module proxy), and Google's own Python SDK (google-cloud-storage, from PyPI).
#  1. Our XML API front (tests/gcs/server.py, over s3rver) and fake-gcs-server answer the same
#     requests, the GCS store's: every difference is a listed one, with the side Google's
#     documentation backs (tests/gcs/compare_fake_gcs.py). fake-gcs-server implements of the
#     XML API object GET/HEAD (ranges too), DELETE and a one-page listing without IsTruncated;
#     no XML PUT (only signed-URL and form uploads), no x-goog-if-generation-match, no XML
#     multipart upload. The agent refuses its listing (no IsTruncated), so the store's own
#     tests stay on our front (test_gcs_store.sh).
#  2. google-cloud-storage (JSON API) uploads a run the agent wrote to a file:// store,
#     create-only (ifGenerationMatch=0: a second upload of the same object is refused), then
#     lists it and reads LATEST and the manifest it names.
S3_SERVER=s3rver
. "$(dirname "$0")/lib.sh"
. "$RR_SRC/tests/integration/s3lib.sh"
. "$RR_SRC/tests/integration/gcslib.sh"

"$RR_SRC/tests/thirdparty/install.sh" fake-gcs
FAKE_GCS_BIN=$(RR_TOOLS_PRINT=1 "$RR_SRC/tests/thirdparty/install.sh" fake-gcs)
SDK_PY=$(sdk_python)
start_s3
FPORT=$(free_port)
mkdir -p "$W/fake-gcs-seed/$S3_BUCKET" # a folder under -data is a bucket at start
"$FAKE_GCS_BIN" -scheme http -host 127.0.0.1 -port "$FPORT" -public-host "127.0.0.1:$FPORT" \
	-external-url "http://127.0.0.1:$FPORT" -backend memory -data "$W/fake-gcs-seed" \
	> "$W/fake-gcs.log" 2>&1 &
FAKE_PID=$!
# shellcheck disable=SC2154 # assigned inside the trap string itself
trap 'g_rc=$?; kill $FAKE_PID 2>/dev/null; stop_gcs; stop_s3; cleanup $g_rc' EXIT
start_gcs gcs.log --accept-token test-token
wait_for 30 curl -fsS -o /dev/null "http://127.0.0.1:$FPORT/_internal/healthcheck" ||
	fail "fake-gcs-server did not start: $(tail -n 5 "$W/fake-gcs.log")"

# --- 1. the two servers side by side ---
"$PY" "$RR_SRC/tests/gcs/compare_fake_gcs.py" "http://127.0.0.1:$GPORT" "http://127.0.0.1:$FPORT" \
	"$S3_BUCKET" test-token > compare.out 2>&1 || fail "servers compared: $(cat compare.out)"
cat compare.out
ok "our GCS front and fake-gcs-server: $(tail -n 1 compare.out)"

# --- 2. google-cloud-storage with a run the agent wrote ---
export HOME="$W/home" STORAGE_EMULATOR_HOST="http://127.0.0.1:$FPORT"
run_rr write.log --precision exact --store "file://$W/store" -- \
	"$PY" "$TRAINER" --steps 60 --step-time 0 --checkpoint-every 20 --out out.json
expect_eq "$RC" 0 "the run into file://"
"$SDK_PY" - "$S3_BUCKET" "$W/store" runs/ > upload.out 2>&1 <<'PY' || fail "SDK upload: $(cat upload.out)"
import os, sys
from google.api_core import exceptions
from google.api_core.client_options import ClientOptions
from google.auth.credentials import AnonymousCredentials
from google.cloud import storage
bucket, root, prefix = sys.argv[1:]
c = storage.Client(project="rr-test", credentials=AnonymousCredentials(),
                   client_options=ClientOptions(api_endpoint=os.environ["STORAGE_EMULATOR_HOST"]))
b, n = c.bucket(bucket), 0
for d, _, files in os.walk(root):
    for f in files:
        path = os.path.join(d, f)
        b.blob(prefix + os.path.relpath(path, root)).upload_from_filename(path, if_generation_match=0)
        n += 1
try:  # create-only, as the agent writes manifests: the same name again is refused
    b.blob(prefix + "default/LATEST").upload_from_string(b"{}", if_generation_match=0)
    raise SystemExit("a create-only upload over LATEST was accepted")
except exceptions.PreconditionFailed:
    pass
print(n)
PY
"$SDK_PY" "$RR_SRC/tests/thirdparty/sdk_read_back.py" gcs "$S3_BUCKET" runs/default/ > sdk.out 2>&1 ||
	fail "google-cloud-storage read-back: $(cat sdk.out)"
ok "SDK: google-cloud-storage uploaded the agent's run create-only ($(cat upload.out) objects; over LATEST: 412); $(cat sdk.out)"
finish
