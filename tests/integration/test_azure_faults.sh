#!/usr/bin/env bash
# The az:// store under faults: the loopback proxy (tests/faults/proxy.py) between the agent
# and Azurite answers in Azure's own error form (503 ServerBusy with Retry-After, 500
# OperationTimedOut and InternalError, the code in x-ms-error-code and the XML body), breaks
# connections both ways (a reset while the request body is sent, after Azurite applied a
# write, in the middle of an answer) and stalls requests. Every case ends with check_store
# (faultlib.sh): the newest checkpoint the trainer committed is LATEST, verify calls nothing
# damaged, and a restore onto an empty directory is byte-identical to what the trainer
# wrote. Then garbage collection through the proxy: Blob Batch deletes, one by one when the
# batch is refused. (A stall past the HTTP layer's timeouts is test_s3_faults_more.sh's: the
# request core and its timeouts are the same for every store.)
. "$(dirname "$0")/lib.sh"
. "$RR_SRC/tests/integration/azurelib.sh"
. "$RR_SRC/tests/integration/faultlib.sh"
# shellcheck disable=SC2154 # assigned inside the trap string itself
trap 'f_rc=$?; set +e; stop_faults; stop_azurite; stop_az_server; (exit $f_rc); cleanup' EXIT

# Two hours back until the gc section (its grace is at least 10 minutes).
start_azurite_back
az_env
azcli storage container create -n "$AZ_CONTAINER" > /dev/null || fail "az storage container create"
# Azurite honours If-None-Match and If-Match itself: the proxy only breaks things.
start_proxy "$AZ_PORT"
AZ_DIRECT=$AZURE_STORAGE_CONNECTION_STRING
# azd ARGS...: the Azure CLI at Azurite itself, past the proxy.
azd() { AZURE_STORAGE_CONNECTION_STRING=$AZ_DIRECT azcli "$@"; }
export AZURE_STORAGE_CONNECTION_STRING="AccountName=$AZ_ACCOUNT;AccountKey=$AZ_KEY;BlobEndpoint=$FAULT_URL/$AZ_ACCOUNT"
FAULT_STORE_ROOT="az://$AZ_CONTAINER"

FAULT_AGENT_ARGS="--keep 10"
# persist_ok NAME STEPS [BIG]: faultlib's persist, and no persist failed on the way (Azure's
# retries carry every case here).
persist_ok() {
	persist "$@"
	expect_no_grep 'persist of .* failed|previous checkpoint stays' "$1.log" "$1: no persist failed"
}

# --- 503 ServerBusy (with Retry-After: 1) on every 4th PUT, 500 OperationTimedOut on every
# 5th, InternalError on the block lists and the manifests, error bodies of every length ---
export RESUME_RUN_S3_PART_SIZE=5242880
fault '{"method": "PUT", "every": 4, "action": "error", "status": 503, "code": "ServerBusy", "retry_after": 1}'
fault '{"method": "PUT", "every": 5, "action": "error", "status": 500, "code": "OperationTimedOut", "body_len": 0}'
fault '{"method": "PUT", "query": "comp=blocklist", "nth": 1, "action": "error", "status": 500, "code": "InternalError", "body_len": 70000}'
fault '{"method": "PUT", "path": "/manifest.json$", "nth": 1, "action": "error", "status": 503, "code": "ServerBusy", "body_len": 1}'
persist_ok busy 3 big
n=$(fired)
[ "$n" -ge 6 ] || fail "busy: only $n faults fired"
expect_grep 'ServerBusy: The server is busy.*; retrying in (1[0-9]{3}|[2-9][0-9]{3}) ms' busy.log "busy: Retry-After honoured (a wait of at least 1 s)"
expect_grep '500 OperationTimedOut.*; retrying in' busy.log "busy: OperationTimedOut retried"
no_faults
check_store busy "$W/ckpt-busy"
ok "persist under 503 ServerBusy (Retry-After 1 s) / 500 OperationTimedOut / InternalError ($n injected): LATEST step-3, verifies, restores identical"

# --- the same errors while reading: every 2nd GET of a chunk, manifest or LATEST, bodies
# of 1 and 70000 bytes (past the 64 KiB kept of an error body) ---
for spec in '503 ServerBusy 1' '500 OperationTimedOut 70000'; do
	read -r status code len <<< "$spec"
	fault "{\"method\": \"GET\", \"path\": \"/(chunks/|checkpoints/|LATEST)\", \"every\": 2, \"action\": \"error\", \"status\": $status, \"code\": \"$code\", \"body_len\": $len}"
	check_store busy "$W/ckpt-busy"
	[ "$(fired)" -ge 3 ] || fail "reads with $status $code ($len bytes): only $(fired) faults fired"
	no_faults
done
ok "verify and restore under 503 ServerBusy / 500 OperationTimedOut on every 2nd read (bodies of 1 and 70000 bytes): nothing called damaged, restore identical"

# --- resets from the client's side: while a block and while a whole chunk is being sent ---
fault '{"method": "PUT", "query": "comp=block&", "every": 3, "action": "reset_mid_body"}'
fault '{"method": "PUT", "path": "/chunks/", "nth": 2, "action": "reset_mid_body"}'
persist_ok bodyreset 2 big
n=$(fired)
[ "$n" -ge 2 ] || fail "bodyreset: only $n faults fired"
no_faults
check_store bodyreset "$W/ckpt-bodyreset"
ok "reset while sending blocks and chunks ($n resets): LATEST step-2, verifies, restores identical"

# --- resets after Azurite applied the write: the create-only manifest, a Put Block List,
# LATEST's compare-and-swap and chunks; the retries meet 409 BlobAlreadyExists or 412, and
# the agent reads the blob back to see it holds its own bytes ---
fault '{"method": "PUT", "path": "/checkpoints/.*/manifest.json", "nth": 1, "action": "reset_after_apply"}'
fault '{"method": "PUT", "query": "comp=blocklist", "nth": 1, "action": "reset_after_apply"}'
fault '{"method": "PUT", "path": "/LATEST$", "nth": 2, "action": "reset_after_apply"}'
fault '{"method": "PUT", "path": "/chunks/", "every": 5, "action": "reset_after_apply"}'
persist_ok applied 3 big
n=$(fired)
[ "$n" -ge 4 ] || fail "applied: only $n faults fired"
expect_grep 'manifest.json: the answer to its write was lost and the retry found it written; it holds our bytes' \
	applied.log "applied: the manifest's lost answer recognised"
no_faults
check_store applied "$W/ckpt-applied"
ok "reset after Azurite applied the manifest, a block list, LATEST and chunks ($n lost answers): LATEST step-3, restores identical"

# --- resets from the server's side: every 2nd chunk GET cut after its first bytes (big
# chunks come in ranges, so a range is cut too); stalls of 4 s on a manifest PUT, a block
# list and a chunk GET ---
fault '{"method": "GET", "path": "/chunks/", "every": 2, "action": "reset_mid_answer"}'
check_store applied "$W/ckpt-applied"
n=$(fired)
[ "$n" -ge 2 ] || fail "midget: only $n faults fired"
no_faults
fault '{"method": "PUT", "path": "/manifest.json$", "nth": 1, "action": "stall", "seconds": 4}'
fault '{"method": "PUT", "query": "comp=blocklist", "nth": 1, "action": "stall", "seconds": 4}'
fault '{"method": "GET", "path": "/chunks/", "nth": 2, "action": "stall", "seconds": 4}'
persist_ok stalled 2 big
check_store stalled "$W/ckpt-stalled"
[ "$(fired)" -ge 3 ] || fail "stalls: only $(fired) fired"
no_faults
unset RESUME_RUN_S3_PART_SIZE
ok "reset mid-answer on chunk reads ($n cut) and 4 s stalls on a manifest, a block list and a read: verify calls nothing damaged, restores identical"

# --- garbage collection: Blob Batch deletes (one POST per 256 blobs, no single DELETE),
# with a 503 ServerBusy on the first batch; then an account that refuses Blob Batch ---
count_log() { curl -fsS "$FAULT_CTL/log" | "$PY" -c 'import json,sys; m,q=sys.argv[1:]; print(sum(1 for e in json.load(sys.stdin) if e["method"]==m and q in e["query"]))' "$1" "$2"; }
chunks_left() { azd storage blob list -c "$AZ_CONTAINER" --prefix "$1/default/chunks/" --num-results '*' --query 'length([])' -o tsv; }
azurite_clock_right # what the persists above stored is two hours old
before=$(chunks_left busy)
curl -fsS -X DELETE "$FAULT_CTL/log" > /dev/null
fault '{"method": "POST", "query": "comp=batch", "nth": 1, "action": "error", "status": 503, "code": "ServerBusy", "retry_after": 1}'
run_rr gc.log gc -v --keep 1 --gc-grace 10m --store "$FAULT_STORE_ROOT/busy"
expect_eq "$RC" 0 "gc with Blob Batch"
after=$(chunks_left busy)
[ "$after" -lt "$before" ] || fail "gc deleted no chunk ($before before, $after after)"
expect_eq "$(count_log POST comp=batch)" 3 "Blob Batch requests (the manifests' refused as busy and sent again, the chunks')"
expect_eq "$(count_log DELETE '')" 0 "single DELETEs"
no_faults
check_store busy "$W/ckpt-busy"
ok "gc: 2 manifests, then $((before - after)) chunks deleted by one Blob Batch each (the first sent again after a 503 ServerBusy), no single DELETE; step-3 intact"

before=$(chunks_left applied)
curl -fsS -X DELETE "$FAULT_CTL/log" > /dev/null
fault '{"method": "POST", "query": "comp=batch", "action": "error", "status": 400, "code": "FeatureNotSupported"}'
run_rr gc2.log gc --keep 1 --gc-grace 10m --store "$FAULT_STORE_ROOT/applied"
expect_eq "$RC" 0 "gc when Blob Batch is refused"
expect_grep 'Azure refused POST a Blob Batch of deletes: 400 FeatureNotSupported.*deleting blobs one by one' gc2.log "gc2: the fallback is said"
expect_eq "$(count_log POST comp=batch)" 1 "Blob Batch asked once"
deleted=$(count_log DELETE '')
[ "$deleted" -ge 3 ] || fail "gc2: only $deleted single DELETEs"
[ "$(chunks_left applied)" -lt "$before" ] || fail "gc2 deleted no chunk"
no_faults
check_store applied "$W/ckpt-applied"
ok "gc where Blob Batch is refused (400): said once, $deleted blobs deleted one by one; step-3 intact"
finish
