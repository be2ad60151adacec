#!/usr/bin/env bash
# The fault matrix, part 1: S3 error answers and broken connections, injected by the
# loopback proxy (tests/faults/proxy.py) between the agent and the S3 test server. Every case
# ends with check_store: the newest checkpoint the trainer committed is LATEST, verify calls
# nothing damaged, and it restores byte-identical onto an empty directory.
#
# The whole matrix (docs/failure-modes.md, "Failure modes"):
#   this file                   500/503 SlowDown/InternalError answers of every body length
#                               (persist, verify, restore); reset while sending a part; reset
#                               after the server applied a create-only PUT (the retry meets
#                               412); reset mid-GET
#   test_s3_faults_more.sh      stall past the timeouts; RequestTimeTooSkewed; wrong region;
#                               ExpiredToken mid-run; garbage/truncated LATEST and manifest; a
#                               chunk deleted behind our back; disk full on restore
#   test_s3_faults_process.sh   the trainer killed mid-write; the agent SIGKILLed mid-persist
#                               and restarted; a notice during a persist; a routine commit
#                               landing as the trainer is asked for the notice checkpoint; a
#                               second notice while the notice checkpoint is persisted
#   covered elsewhere, not repeated here:
#     test_s3_store.sh          the S3 server killed mid-persist and restarted
#     test_cloud_notices.sh     a metadata outage (one line, training goes on, later notice
#                               handled); an expired IMDSv2 token
#     test_disk_full.sh         disk full on persist
#     test_corrupt_fallback.sh  a corrupt chunk: verify names it, restore falls back loudly
#     test_signal_notices.sh    a second notice (SIGTERM) forwarded at once; a notice before
#                               the trainer's handler is ready
#     unit_store_s3             the same faults at the request level (error bodies of every
#                               length, 412 after a lost answer with our bytes or others',
#                               clock skew from ServerTime or Date)
# The S3 server: s3rver, not SeaweedFS (tests/integration/s3lib.sh): fault injection through tests/faults/proxy.py, built around s3rver (it enforces the conditional writes s3rver lacks).
S3_SERVER=s3rver
. "$(dirname "$0")/lib.sh"
. "$RR_SRC/tests/integration/s3lib.sh"
. "$RR_SRC/tests/integration/faultlib.sh"

start_s3
s3_env
start_faults
export RESUME_RUN_CLOUD=none

# --- error answers while persisting: every 3rd PUT a 503 SlowDown, every 4th a 500
# InternalError, with bodies longer than the small objects they answer ---
fault '{"method": "PUT", "every": 3, "action": "error", "status": 503, "code": "SlowDown", "body_len": 3000}'
fault '{"method": "PUT", "every": 4, "action": "error", "status": 500, "code": "InternalError", "body_len": 0}'
fault '{"method": "POST", "every": 2, "action": "error", "status": 503, "code": "SlowDown", "body_len": 1}'
persist errput 3
n=$(fired)
[ "$n" -ge 3 ] || fail "errput: only $n faults fired"
expect_grep 'retrying in' errput.log "errput: retried"
no_faults
check_store errput "$W/ckpt-errput"
ok "persist under 503 SlowDown / 500 InternalError answers ($n injected): LATEST step-3, verifies, restores identical"

# --- error answers while reading: every 2nd GET of a chunk, manifest or LATEST is an error
# whose body is 0, 1, exactly a chunk's size, one byte more, 5000, 70000 bytes (over the
# 64 KiB kept of an error body) ---
small=$(s3d s3 ls --recursive "s3://$S3_BUCKET/errput/default/chunks/" | awk '{print $3}' | sort -n | head -n 1)
[ -n "$small" ] || fail "no chunk listed"
for len in 0 1 "$small" $((small + 1)) 5000 70000; do
	for kind in '503 SlowDown' '500 InternalError'; do
		read -r status code <<< "$kind"
		fault "{\"method\": \"GET\", \"path\": \"/(chunks/|checkpoints/|LATEST)\", \"every\": 2, \"action\": \"error\", \"status\": $status, \"code\": \"$code\", \"body_len\": $len}"
		check_store errput "$W/ckpt-errput"
		[ "$(fired)" -ge 3 ] || fail "reads with $status bodies of $len bytes: only $(fired) faults fired"
		no_faults
	done
done
ok "verify and restore under 500/503 answers with bodies of 0, 1, $small (a chunk's size), $((small + 1)), 5000, 70000 bytes: nothing called damaged, restore identical"

# --- a reset while sending a part (6 MB chunks go up in two 5 MiB parts), and while
# sending a plain chunk ---
export RESUME_RUN_S3_PART_SIZE=5242880
fault '{"method": "PUT", "query": "partNumber=", "every": 3, "action": "reset_mid_body"}'
fault '{"method": "PUT", "path": "/chunks/", "nth": 2, "action": "reset_mid_body"}'
persist partreset 2 big
n=$(fired)
[ "$n" -ge 2 ] || fail "partreset: only $n faults fired"
no_faults
check_store partreset "$W/ckpt-partreset"
ok "reset while sending parts and chunks ($n resets): LATEST step-2, verifies, restores identical"

# --- a reset after the server applied a create-only PUT: the manifest, a multipart
# completion and LATEST are written, their answers lost; the retries meet 412 and the agent
# reads the object back to see it holds its own bytes ---
fault '{"method": "PUT", "path": "/checkpoints/.*/manifest.json", "nth": 1, "action": "reset_after_apply"}'
fault '{"method": "POST", "query": "uploadId=", "nth": 1, "action": "reset_after_apply"}'
fault '{"method": "PUT", "path": "/LATEST$", "nth": 1, "action": "reset_after_apply"}'
fault '{"method": "PUT", "path": "/chunks/", "every": 5, "action": "reset_after_apply"}'
persist applied 3 big
n=$(fired)
[ "$n" -ge 4 ] || fail "applied: only $n faults fired"
lost=$(grep -c 'answer to its write was lost.*holds our bytes' applied.log || true)
[ "$lost" -ge 2 ] || fail "applied: $lost lost answers recognised, expected the manifest's and the completion's: $(grep -i 'lost\|412\|precondition' applied.log)"
expect_grep 'manifest.json: the answer to its write was lost' applied.log "applied: the manifest's lost answer (412 on the retry)"
no_faults
check_store applied "$W/ckpt-applied"
ok "reset after the server applied create-only PUTs and a completion ($n lost answers, $lost met 412 or an error and were read back as ours), LATEST step-3, restores identical"
unset RESUME_RUN_S3_PART_SIZE

# --- a reset in the middle of an answer: every 2nd GET of a chunk is cut after its first
# bytes (the 6 MB chunks come in ranges, so a range is cut too) ---
export RESUME_RUN_S3_PART_SIZE=5242880
fault '{"method": "GET", "path": "/chunks/", "every": 2, "action": "reset_mid_answer"}'
check_store applied "$W/ckpt-applied"
n=$(fired)
[ "$n" -ge 2 ] || fail "midget: only $n faults fired"
no_faults
unset RESUME_RUN_S3_PART_SIZE
ok "reset mid-GET ($n answers cut): verify calls nothing damaged, restore identical"
finish
