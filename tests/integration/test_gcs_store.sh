#!/usr/bin/env bash
# The GCS store through the XML API against a test server that requires a bearer token on
# every request and enforces GCS's generation preconditions (tests/gcs/server.py, in front
# of the S3 test server): a service-account key turned into a signed JWT and exchanged for a
# token at the key's token_uri; the full drill of the core issue on gs://; the metadata
# server's token as the other credential source; a key the token endpoint refuses.
# The S3 server: s3rver, not SeaweedFS (tests/integration/s3lib.sh): our GCS front (tests/gcs/server.py) stores into s3rver.
S3_SERVER=s3rver
. "$(dirname "$0")/lib.sh"
. "$RR_SRC/tests/integration/s3lib.sh"
. "$RR_SRC/tests/integration/gcslib.sh"

# shellcheck disable=SC2154 # assigned inside the trap string itself
trap 'g_rc=$?; stop_gcs; stop_s3; cleanup $g_rc' EXIT
start_s3
# A service-account key whose token_uri is the test server's token endpoint.
gcs_key sa.json
start_gcs gcs.log --key-file sa.json --accept-token gcp-token
gstate() { curl -fsS "http://127.0.0.1:$GPORT/_test/state" | "$PY" -c 'import json,sys; print(json.load(sys.stdin)[sys.argv[1]])' "$1"; }

export STORAGE_EMULATOR_HOST="127.0.0.1:$GPORT" GOOGLE_APPLICATION_CREDENTIALS="$W/sa.json"
export RESUME_RUN_STORE="gs://$S3_BUCKET/runs" HOME="$W/home"
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY GCE_METADATA_HOST
STEPS=300
reference_run $STEPS ref.json

# --- the drill on gs:// ---
( wait_for 30 test -d .resume-run/checkpoints/step-50 && touch NOTICE ) &
notice_pid=$!
run_rr m1.log --precision exact --drill-file NOTICE -- "$PY" "$TRAINER" --steps $STEPS --step-time 0.01 --out m1.json
wait $notice_pid
expect_eq "$RC" "$RR_PREEMPTED" "machine 1 exit status"
expect_grep 'checkpoint step-[0-9]+ is durable in the store' m1.log "durable before exit"
saved=$(sed -nE 's/.*checkpointed at step ([0-9]+), exiting for preemption.*/\1/p' m1.log)
[ -n "$saved" ] || fail "trainer did not checkpoint on the notice"
"$RR_BIN" verify > verify.out 2>&1 || fail "verify: $(cat verify.out)"
expect_grep "^step-$saved: ok" verify.out "verify over GCS"
ok "drill: step-$saved durable in GCS (bearer token from a signed JWT) before the trainer exited"

rm -rf .resume-run/checkpoints NOTICE
run_rr m2.log --precision exact -- "$PY" "$TRAINER" --steps $STEPS --step-time 0 --out m2.json
expect_eq "$RC" 0 "machine 2 exit status"
expect_grep "restored step-$saved" m2.log "restore from GCS"
expect_eq "$(json_field m2.json sha256)" "$(json_field ref.json sha256)" "final weights"
ok "new machine: restored step-$saved from GCS, final state bit-identical to an uninterrupted run"

# LATEST moved by compare-and-swap on generations: every update took (no precondition
# failure), and it names the newest checkpoint.
last=$(sed -nE 's/^\* (step-[0-9]+) .*/\1/p' <("$RR_BIN" ls))
expect_eq "$last" "step-$STEPS" "LATEST after machine 2"
expect_no_grep 'could not update LATEST' m1.log "LATEST updates on machine 1"
expect_no_grep 'could not update LATEST' m2.log "LATEST updates on machine 2"
[ "$(gstate unauthorized)" = 0 ] || fail "the server refused $(gstate unauthorized) requests"
[ "$(gstate tokens_issued)" -ge 1 ] || fail "no token was issued"
ok "LATEST kept by generation preconditions ($last); every request carried a valid bearer token"

# --- the metadata server's token, when there is no key file ---
"$PY" "$RR_SRC/tests/metadata/server.py" --cloud gcp --port 0 --control-port 0 > meta.out 2> meta.log &
META_PID=$!
trap 'g_rc=$?; kill $GCS_PID $META_PID 2>/dev/null; stop_s3; cleanup $g_rc' EXIT
wait_for 60 grep -q '^ready' meta.out || fail "the metadata test server did not start"
mport=$(sed -nE 's/^ready ([0-9]+)/\1/p' meta.out)
env -u GOOGLE_APPLICATION_CREDENTIALS GCE_METADATA_HOST="127.0.0.1:$mport" "$RR_BIN" ls > meta-ls.out 2>&1 ||
	fail "ls with the metadata server's token: $(cat meta-ls.out)"
expect_grep "^\* $last" meta-ls.out "ls with the metadata token"
grep -q 'service-accounts/default/token' meta.log || fail "the metadata token was not fetched"
ok "metadata server token (Metadata-Flavor: Google) accepted by the GCS server"

# --- a key the token endpoint does not know: refused at once, with the cause ---
"$PY" - sa.json > other-sa.json <<'PY'
import json, sys
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
sa = json.load(open(sys.argv[1]))
sa["private_key"] = rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(
    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
print(json.dumps(sa))
PY
GOOGLE_APPLICATION_CREDENTIALS="$W/other-sa.json" run_rr bad-key.log ls
expect_eq "$RC" 125 "exit status with a key the token endpoint refuses"
expect_grep 'invalid_grant' bad-key.log "the token endpoint's reason is named"
expect_no_grep 'BEGIN PRIVATE KEY' bad-key.log "the key is not logged"
ok "a key the token endpoint refuses: exit 125 with its reason ($(head -c 150 bad-key.log))"
finish
