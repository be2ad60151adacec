#!/usr/bin/env bash
# The S3 store against SeaweedFS (a real S3 server that verifies SigV4 and session tokens):
# the drill of the core issue, the server's own conditional writes, gc's batch delete, a
# multipart object, list pagination, encryption, a wrong secret, the server going away in
# the middle of a persist, credentials from a profile and from a container endpoint
# (temporary credentials from SeaweedFS's own STS, so the session token is checked), and what
# the agent wrote read back by the AWS CLI and boto3.
. "$(dirname "$0")/lib.sh"
. "$RR_SRC/tests/integration/s3lib.sh"

start_s3
s3_env
STORE="s3://$S3_BUCKET/runs"
export RESUME_RUN_STORE=$STORE
STEPS=300
reference_run $STEPS ref.json

# --- the drill, on S3 ---
( wait_for 30 test -d .resume-run/checkpoints/step-50 && touch NOTICE ) &
notice_pid=$!
run_rr m1.log --precision exact --drill-file NOTICE -- "$PY" "$TRAINER" --steps $STEPS --step-time 0.01 --out m1.json
wait $notice_pid
expect_eq "$RC" "$RR_PREEMPTED" "machine 1 exit status"
expect_grep 'checkpoint step-[0-9]+ is durable in the store' m1.log "durable before exit"
saved=$(sed -nE 's/.*checkpointed at step ([0-9]+), exiting for preemption.*/\1/p' m1.log)
[ -n "$saved" ] || fail "trainer did not checkpoint on the notice"
"$RR_BIN" ls > ls.out 2>&1 || fail "ls: $(cat ls.out)"
expect_grep "^\* step-$saved +committed" ls.out "ls over S3 shows step-$saved as LATEST"
"$RR_BIN" verify > verify.out 2>&1 || fail "verify: $(cat verify.out)"
expect_grep "^step-$saved: ok" verify.out "verify over S3"
ok "drill: step-$saved durable in S3 before the trainer exited; ls and verify read it back"

rm -rf .resume-run/checkpoints NOTICE
run_rr m2.log --precision exact -- "$PY" "$TRAINER" --steps $STEPS --step-time 0 --out m2.json
expect_eq "$RC" 0 "machine 2 exit status"
expect_grep "restored step-$saved" m2.log "restore from S3"
expect_eq "$(json_field m2.json sha256)" "$(json_field ref.json sha256)" "final weights"
expect_eq "$(json_field m2.json loss_history_sha256)" "$(json_field ref.json loss_history_sha256)" "loss history"
ok "new machine: restored step-$saved from S3, final state bit-identical to an uninterrupted run"

# --- other clients read what the agent wrote ---
last=$(sed -nE 's/^\* (step-[0-9]+) .*/\1/p' <("$RR_BIN" ls))
[ -n "$last" ] || fail "no LATEST checkpoint after machine 2"
s3cli s3 ls --recursive "$STORE/default/" > aws-ls.out
expect_grep "runs/default/checkpoints/$last/manifest.json" aws-ls.out "aws s3 ls sees the manifest"
expect_grep "runs/default/LATEST" aws-ls.out "aws s3 ls sees LATEST"
s3cli s3 cp "$STORE/default/LATEST" latest.json > /dev/null
grep -q "\"checkpoint\":\"$last\"" latest.json || fail "LATEST read by the AWS CLI: $(cat latest.json)"
# boto3 downloads the whole run into a local directory shaped like a file:// store; the
# agent restores from that copy, so every object as another client sees it is complete.
"$PY" - "$S3_BUCKET" runs/ "$W/boto-copy" <<'PY'
import os, sys, boto3
bucket, prefix, dest = sys.argv[1:]
s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
n = 0
for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix, PaginationConfig={"PageSize": 50}):
    for o in page.get("Contents", []):
        path = os.path.join(dest, o["Key"][len(prefix):])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        s3.download_file(bucket, o["Key"], path)
        n += 1
print(f"boto3 downloaded {n} objects")
PY
run_rr boto-restore.log restore --store "file://$W/boto-copy" --to from-boto
expect_eq "$RC" 0 "restore from the boto3 copy"
run_rr hand.log restore --checkpoint "$last" --to by-hand
diff -r "from-boto/$last" "by-hand/$last" || fail "boto3 copy and S3 restore differ"
diff -r "by-hand/$last" ".resume-run/checkpoints/$last" || fail "restore from S3 differs from the original"
ok "interop: aws s3 ls/cp read the run; boto3's download restores to the trainer's own files"

# The current boto3 (from PyPI, tests/thirdparty/install.sh) lists the run in pages and
# reads LATEST and the manifest it names.
"$(sdk_python)" "$RR_SRC/tests/thirdparty/sdk_read_back.py" s3 "$S3_BUCKET" runs/default/ > sdk.out 2>&1 ||
	fail "boto3 read-back: $(cat sdk.out)"
ok "SDK read-back: $(cat sdk.out)"
# The server itself enforces the conditional writes the agent's commit safety rests on
# (create-only with If-None-Match: *, compare-and-swap with If-Match): asked with boto3.
"$(sdk_python)" - "$S3_BUCKET" > cond.out 2>&1 <<'PY' || fail "conditional writes: $(cat cond.out)"
import os, sys, boto3, botocore
bucket, key = sys.argv[1], "conditional/probe"
s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
def status(**kw):
    try:
        return s3.put_object(Bucket=bucket, Key=key, Body=b"x", **kw)["ResponseMetadata"]["HTTPStatusCode"]
    except botocore.exceptions.ClientError as e:
        return e.response["ResponseMetadata"]["HTTPStatusCode"]
first = status(IfNoneMatch="*")
again = status(IfNoneMatch="*")
etag = s3.head_object(Bucket=bucket, Key=key)["ETag"]
stale = status(IfMatch='"0123456789abcdef0123456789abcdef"')
swap = status(IfMatch=etag)
print(f"create-only {first} then {again}; If-Match stale {stale}, current {swap}")
sys.exit(0 if (first, again, stale, swap) == (200, 412, 412, 200) else 1)
PY
ok "the server enforces conditional writes: $(cat cond.out)"

# The AWS CLI writes a run (a file:// store synced up, big objects as multipart); the agent
# restores it from S3. (Not the file store's empty lock files: Debian's awscli 2.9
# (botocore 1.29) sends "Expect: 100-continue" with an empty body, SeaweedFS answers at once
# without a 100, as RFC 9110 10.1.1 allows when there is no content, and botocore's next
# request on that connection then stalls for its 60 s read timeout.)
s3cli s3 sync --quiet --exclude '.locks/*' "$W/boto-copy" "s3://$S3_BUCKET/synced/"
run_rr synced.log restore --store "s3://$S3_BUCKET/synced" --checkpoint "$last" --to from-synced
expect_eq "$RC" 0 "restore of a run the AWS CLI uploaded"
diff -r "from-synced/$last" "by-hand/$last" || fail "restore of the CLI-uploaded run differs"
ok "interop: a run uploaded by aws s3 sync restores from S3"

# --- gc: the older checkpoints' manifests go in one batch delete (DeleteObjects with
# Content-MD5); the server really removed them, LATEST's checkpoint still verifies ---
manifests() { s3cli s3 ls --recursive "s3://$S3_BUCKET/synced/default/checkpoints/" | grep -c '/manifest.json$' || true; }
before=$(manifests)
[ "$before" -ge 2 ] || fail "the synced run has $before checkpoints, gc needs two or more"
run_rr gc.log gc --store "s3://$S3_BUCKET/synced" --keep 1
expect_eq "$RC" 0 "gc"
# (--keep 1 keeps the newest, and the newest proven one where that is another)
after=$(manifests)
[ "$after" -ge 1 ] && [ "$after" -lt "$before" ] || fail "gc --keep 1: $before manifests before, $after after"
expect_grep "gc: deleted $((before - after)) checkpoints" gc.log "gc's count of deleted checkpoints"
run_rr gc-verify.log verify --store "s3://$S3_BUCKET/synced"
expect_eq "$RC" 0 "verify after gc"
ok "gc: $((before - after)) of $before checkpoints deleted in one DeleteObjects, the AWS CLI lists $after left, they verify"

# --- a multipart object: 8 MiB of random bytes does not compress, so with 5 MiB parts its
# chunk goes up in 2 parts (in flight at once) and comes down in 2 ranges ---
mkdir -p big-ckpt/.step-1.tmp
head -c 8388608 /dev/urandom > big-ckpt/.step-1.tmp/random.bin
mv big-ckpt/.step-1.tmp big-ckpt/step-1
export RESUME_RUN_S3_PART_SIZE=5242880
run_rr big.log -v --store "s3://$S3_BUCKET/big" --checkpoint-dir big-ckpt -- true
expect_eq "$RC" 0 "persist with a multipart chunk"
chunk=$(s3cli s3 ls --recursive "s3://$S3_BUCKET/big/default/chunks/" | awk '$3 > 5242880 {print $4}')
[ -n "$chunk" ] || fail "no chunk bigger than a part"
# S3 gives an object completed from N parts the ETag "<md5 of the parts' md5s>-N".
etag=$(s3cli s3api head-object --bucket "$S3_BUCKET" --key "$chunk" --query ETag --output text)
[[ "$etag" =~ -2\"?$ ]] || fail "expected the ETag of a 2-part upload, got $etag"
run_rr big-restore.log restore --store "s3://$S3_BUCKET/big" --to big-restored
expect_eq "$RC" 0 "restore of the multipart chunk"
cmp big-restored/step-1/random.bin big-ckpt/step-1/random.bin || fail "multipart object differs"
ok "multipart: an 8 MiB chunk went up as one 2-part upload (ETag $etag) and came back identical"
unset RESUME_RUN_S3_PART_SIZE

# --- list pagination: a new agent's start-up listing of chunks/ spans two pages (1100 decoy
# objects sort ahead of the run's chunks under a 1000-key page); it must still see every
# stored chunk, so the same files committed again upload no chunk ---
"$RR_BIN" --store "s3://$S3_BUCKET/paged" --checkpoint-dir big-ckpt -- true > paged1.log 2>&1 ||
	fail "first persist into paged: $(cat paged1.log)"
"$(sdk_python)" - "$S3_BUCKET" paged/default/chunks/00/ 1100 <<'PY' || fail "could not store the decoys"
import concurrent.futures, os, sys, boto3
bucket, prefix, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
keys = [prefix + "00%062x" % i for i in range(n)]
with concurrent.futures.ThreadPoolExecutor(8) as pool:
    list(pool.map(lambda k: s3.put_object(Bucket=bucket, Key=k, Body=b""), keys))
PY
cp -al big-ckpt/step-1 big-ckpt/step-2
run_rr paged2.log --store "s3://$S3_BUCKET/paged" --checkpoint-dir big-ckpt -- true
expect_eq "$RC" 0 "second persist into paged"
expect_grep 'persisted step-2: .* 1 of 1 segments unchanged' paged2.log "the chunk listed on page 2 was reused"
rm -rf big-ckpt/step-2
ok "pagination: with 1100 decoys ahead of it, the run's chunk was found on the second page and not uploaded again"

# --- client-side encryption on SeaweedFS: every object sealed, verify and restore with the key ---
"$PY" -c 'import os; print(os.urandom(32).hex())' > key.hex; chmod 600 key.hex
run_rr enc.log --encryption-key-file key.hex --store "s3://$S3_BUCKET/enc" --checkpoint-dir big-ckpt -- true
expect_eq "$RC" 0 "encrypted persist"
s3cli s3 sync --quiet "s3://$S3_BUCKET/enc/" enc-copy/
"$PY" - enc-copy <<'PY' || fail "an object of the encrypted run is not sealed"
import os, sys
n = 0
for d, _, files in os.walk(sys.argv[1]):
    for f in files:
        n += 1
        if not open(os.path.join(d, f), "rb").read().startswith(b"\x89RRSEAL\n"):
            sys.exit(f"{f} is not sealed")
print(n, "objects, all sealed")
PY
run_rr enc-verify.log verify --encryption-key-file key.hex --store "s3://$S3_BUCKET/enc"
expect_eq "$RC" 0 "verify with the key"
run_rr enc-restore.log restore --encryption-key-file key.hex --store "s3://$S3_BUCKET/enc" --to enc-restored
cmp enc-restored/step-1/random.bin big-ckpt/step-1/random.bin || fail "encrypted restore differs"
run_rr enc-nokey.log restore --store "s3://$S3_BUCKET/enc" --to enc-nokey
expect_eq "$RC" 125 "restore of an encrypted run without the key"
ok "encryption on SeaweedFS: every object sealed; verify and restore with the key; without it: exit 125"

# --- a wrong secret fails at once with the cause ---
start=$SECONDS
AWS_SECRET_ACCESS_KEY=not-the-secret run_rr wrong.log -- true
expect_eq "$RC" 125 "exit status with a wrong secret"
expect_grep 'SignatureDoesNotMatch' wrong.log "the cause is named"
[ "$(grep -c . wrong.log)" -le 2 ] || fail "more than one line for a wrong secret: $(cat wrong.log)"
[ $((SECONDS - start)) -le 5 ] || fail "a wrong secret took $((SECONDS - start)) s to report"
expect_no_grep 'not-the-secret' wrong.log "the secret is not logged"
ok "wrong secret: exit 125 in $((SECONDS - start)) s with one line: $(head -c 160 wrong.log)"

# --- credentials from a profile (shared files) ---
mkdir -p aws
printf '[ckpt]\naws_access_key_id = %s\naws_secret_access_key = %s\n' "$S3_AKID" "$S3_SECRET" > aws/credentials
printf '[profile ckpt]\nregion = us-east-1\n' > aws/config
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY AWS_PROFILE=ckpt \
	AWS_SHARED_CREDENTIALS_FILE="$W/aws/credentials" AWS_CONFIG_FILE="$W/aws/config" \
	"$RR_BIN" ls > profile.out 2>&1 || fail "ls with a profile: $(cat profile.out)"
expect_grep "^\* $last" profile.out "ls with profile credentials"
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY AWS_PROFILE=nosuch \
	AWS_SHARED_CREDENTIALS_FILE="$W/aws/credentials" AWS_CONFIG_FILE="$W/aws/config" \
	"$RR_BIN" ls > noprofile.out 2>&1 && fail "a missing profile should fail"
expect_grep 'nosuch' noprofile.out "the missing profile is named"
ok "profile credentials work; a missing profile is named"

# --- credentials from a container endpoint (ECS/EKS style), with its authorization token:
# temporary credentials from SeaweedFS's STS (AssumeRole), whose session token it checks ---
"$PY" - "$SEAWEEDFS_ROLE" > sts.json <<'PY'
import json, os, sys, boto3
sts = boto3.client("sts", endpoint_url=os.environ["AWS_ENDPOINT_URL"], region_name="us-east-1")
c = sts.assume_role(RoleArn=sys.argv[1], RoleSessionName="rr-test",
                    DurationSeconds=900)["Credentials"]
print(json.dumps({"AccessKeyId": c["AccessKeyId"], "SecretAccessKey": c["SecretAccessKey"],
                  "Token": c["SessionToken"], "Expiration": c["Expiration"].strftime("%Y-%m-%dT%H:%M:%SZ")}))
PY
CPORT=$(free_port)
"$PY" - "$CPORT" "$W/sts.json" > creds-server.log 2>&1 <<'PY' &
import http.server, sys
body = open(sys.argv[2], "rb").read()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.headers.get("Authorization") != "container-token-123":
            self.send_response(403); self.end_headers(); print("refused", flush=True); return
        self.send_response(200); self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
        print("served", self.path, flush=True)
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
CREDS_PID=$!
wait_for 10 "$PY" -c "import socket; socket.create_connection(('127.0.0.1', $CPORT))" 2>/dev/null
echo -n container-token-123 > token-file
env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY \
	AWS_CONTAINER_CREDENTIALS_FULL_URI="http://127.0.0.1:$CPORT/v2/credentials/abc" \
	AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE="$W/token-file" \
	"$RR_BIN" ls > container.out 2>&1 || fail "ls with container credentials: $(cat container.out)"
# The same keys with the session token altered: SeaweedFS refuses them.
read -r key secret token < <("$PY" -c 'import json; d = json.load(open("sts.json"))
print(d["AccessKeyId"], d["SecretAccessKey"], d["Token"][:-4] + ("AAAA" if d["Token"][-4:] != "AAAA" else "BBBB"))')
AWS_ACCESS_KEY_ID=$key AWS_SECRET_ACCESS_KEY=$secret AWS_SESSION_TOKEN=$token run_rr badtoken.log ls
[ "$RC" -ne 0 ] || fail "an altered session token was accepted"
kill $CREDS_PID; wait $CREDS_PID 2>/dev/null || true
expect_grep "^\* $last" container.out "ls with container credentials"
expect_grep 'served /v2/credentials/abc' creds-server.log "the endpoint was asked"
ok "container credentials: SeaweedFS STS keys fetched with the authorization token, then used to sign (an altered token is refused: $(head -c 120 badtoken.log))"

# --- the server goes away in the middle of a persist and comes back ---
mkdir -p outage-ckpt/.step-1.tmp
for i in $(seq 24); do head -c 2000000 /dev/urandom > "outage-ckpt/.step-1.tmp/part$i.bin"; done
cat > slow-trainer.sh <<'SH'
#!/bin/sh
# Commits step-1, then trains on until 8 s after the server came back.
sleep 0.5; mv outage-ckpt/.step-1.tmp outage-ckpt/step-1
while [ ! -f outage-marker ]; do sleep 0.1; done; sleep 8
SH
chmod +x slow-trainer.sh
# stored_chunks: how many chunk objects of the outage run the server lists (a signed
# ListObjectsV2 by curl: quicker than the AWS CLI, and the run has fewer than a page). curl
# 7.88 signs the query string as written, so it is written as SigV4 canonicalizes it:
# parameters sorted, values percent-encoded ('/' as %2F).
stored_chunks() {
	curl -fsS --aws-sigv4 "aws:amz:us-east-1:s3" --user "$S3_AKID:$S3_SECRET" \
		"http://127.0.0.1:$S3_PORT/$S3_BUCKET?list-type=2&prefix=outage%2Fdefault%2Fchunks%2F" |
		grep -o '<Key>[^<]*</Key>' | grep -c '/[0-9a-f]\{64\}' || true
}
chunks_landed() { [ "$(stored_chunks)" -gt 0 ]; }
(
	# As soon as the first chunk of step-1 has landed: freeze the agent (so the rest of the
	# persist certainly has not happened), count what the server stored, stop it, let the
	# agent run into the dead server for 3 s, then start it again on the same port and data.
	wait_for 60 chunks_landed
	agent=$(pgrep -f -- "--store s3://$S3_BUCKET/outage")
	kill -STOP "$agent"
	stored_chunks > chunks-at-crash
	# SIGKILL: the server dies at once, as in a crash (a SIGTERM would wait for the frozen
	# agent's open connections).
	stop_s3 KILL
	kill -CONT "$agent"
	echo "server stopped" > outage-marker
	sleep 3
	s3_serve
	echo "$S3_PID" > s3-restarted.pid
) &
outage_pid=$!
run_rr outage.log -v --threads 1 --store "s3://$S3_BUCKET/outage" --checkpoint-dir outage-ckpt \
	-- ./slow-trainer.sh
wait $outage_pid || fail "the S3 server did not come back"
S3_PID=$(cat s3-restarted.pid)
expect_grep 'server stopped' outage-marker "the server was stopped mid-persist"
expect_grep 'retrying in' outage.log "requests were retried"
expect_grep 'persisted step-1' outage.log "the persist completed"
[ "$(stored_chunks)" -gt "$(cat chunks-at-crash)" ] ||
	fail "no chunk stored after the restart ($(cat chunks-at-crash) at the crash, $(stored_chunks) now)"
run_rr outage-verify.log verify --store "s3://$S3_BUCKET/outage"
expect_eq "$RC" 0 "verify after the outage"
run_rr outage-restore.log restore --store "s3://$S3_BUCKET/outage" --to outage-restored
diff -r outage-restored/step-1 outage-ckpt/step-1 || fail "restore after the outage differs"
ok "server stopped mid-persist for 3 s: retried, persist completed ($(cat chunks-at-crash) of $(stored_chunks) chunks before the crash), verifies and restores"
finish
