#!/usr/bin/env bash
# A machine whose clock is 20 minutes off (libfaketime) against an S3 server that refuses
# requests signed more than 15 minutes from its own time, as S3 does (the fault proxy's
# --max-skew 900): it still persists and restores (RequestTimeTooSkewed: the requests are
# signed with the server's time and sent again), and gc's grace judges a chunk's age by the
# store's clock, so a chunk written seconds ago is not deleted by a machine 20 minutes ahead.
# Then Azure Blob (Azurite behind the proxy, which refuses an x-ms-date more than 15 minutes
# off as Azure does: 403 AuthenticationFailed; the requests are dated by Azure's clock) and
# GCS with a service-account key (our GCS front, whose token endpoint refuses a JWT whose
# iat/exp are off by its clock as Google's does: the JWT is dated by the endpoint's clock):
# persist 20 minutes ahead, restore 20 minutes behind, byte-identical.
# The S3 server: s3rver, which our GCS front (tests/gcs/server.py) stores into.
S3_SERVER=s3rver
. "$(dirname "$0")/lib.sh"
. "$RR_SRC/tests/integration/s3lib.sh"
. "$RR_SRC/tests/integration/gcslib.sh"
. "$RR_SRC/tests/integration/azurelib.sh"
. "$RR_SRC/tests/integration/faultlib.sh"
. "$RR_SRC/tests/integration/metalib.sh"
# shellcheck disable=SC2154 # assigned inside the trap string itself
trap 'k_rc=$?; set +e; stop_gcs; stop_meta; stop_faults; stop_azurite; stop_az_server; stop_s3; (exit $k_rc); cleanup' EXIT

FAKETIME_LIB=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1
[ -e "$FAKETIME_LIB" ] || fail "libfaketime is missing (scripts/install-deps.sh test installs faketime)"
# skewed OFFSET CMD...: CMD with its wall clock OFFSET off ("+20m", "-20m"); its monotonic
# clock and the files' times (the kernel's) are left alone.
skewed() {
	local offset=$1; shift
	# (An ASan build wants its runtime first; libfaketime's wrappers do not disturb it.)
	env LD_PRELOAD="$FAKETIME_LIB" FAKETIME="$offset" \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" FAKETIME_DONT_FAKE_MONOTONIC=1 NO_FAKE_STAT=1 \
		FAKETIME_DONT_RESET=1 "$@"
}
# The trainer runs on this machine's true clock (libfaketime's sleep misbehaves in Python).
TICKER=(env -u LD_PRELOAD -u FAKETIME "$PY" "$RR_SRC/tests/integration/trainers/ticker.py")

start_s3
s3_env
FAULT_ARGS="--max-skew 900" start_faults
export RESUME_RUN_CLOUD=none
S="s3://$S3_BUCKET/skew"

[ "$(skewed +20m date +%s)" -gt $(( $(date +%s) + 1100 )) ] || fail "libfaketime does not move the clock"

# --- persist 20 minutes ahead ---
set +e
skewed +20m "$RR_BIN" --store "$S" --checkpoint-dir "$W/c1" --keep 2 -- "${TICKER[@]}" --every 0.3 --until 5 > ahead.log 2>&1
rc=$?
set -e
expect_eq "$rc" 0 "agent 20 minutes ahead"
expect_grep 'clock is off by -1[12][0-9][0-9] s \(RequestTimeTooSkewed\)' ahead.log "the server's time was taken"
expect_grep 'persisted step-5:' ahead.log "the last commit persisted"
curl -fsS "$FAULT_CTL/log" > ahead-requests.json
"$PY" - ahead-requests.json <<'PY' || fail "requests after the first refusal were still refused"
import json, sys
log = json.load(open(sys.argv[1]))
skewed = [k for k, e in enumerate(log) if e["action"] == "skewed"]
assert skewed, "the proxy never refused a skewed request"
# One refusal (maybe a few in flight at once), then every request signed right.
assert skewed[-1] < 10, skewed
PY
ok "20 minutes ahead: RequestTimeTooSkewed once, then signed with the server's time; 5 checkpoints persisted"

# --- restore 20 minutes behind, on a fresh machine ---
set +e
skewed -20m "$RR_BIN" restore --store "$S" --to "$W/r1" > behind.log 2>&1
rc=$?
set -e
expect_eq "$rc" 0 "restore 20 minutes behind"
expect_grep 'restored step-5' behind.log "the newest restored"
cmp -s "$W/r1/step-5/state.bin" "$W/c1/step-5/state.bin" || fail "restored bytes differ"
ok "20 minutes behind: restores step-5 byte-identical"

# --- gc's grace by the store's clock ---
# Chunks no checkpoint references any more, written seconds ago: with --keep 1 the older
# checkpoints' own chunks go unreferenced (retention ran with --keep 2 above).
"$RR_BIN" gc --store "$S" --keep 1 --gc-grace 1h > gc0.log 2>&1
expect_grep '1 checkpoints and 0 chunks' gc0.log "step-4 deleted, its chunk young"
set +e
skewed +20m "$RR_BIN" gc --store "$S" --keep 1 --gc-grace 15m > gc-ahead.log 2>&1
rc=$?
set -e
expect_eq "$rc" 0 "gc 20 minutes ahead"
expect_grep 'deleted 0 checkpoints and 0 chunks .*; [1-9][0-9]* unreferenced chunks are younger' gc-ahead.log "nothing young deleted"
expect_grep "clock is 1[12][0-9][0-9] s behind this machine's" gc-ahead.log "said the clocks differ"
ok "gc --gc-grace 15m 20 minutes ahead: chunks written seconds ago are young by the store's clock, none deleted"
"$RR_BIN" verify --store "$S" > verify.log 2>&1 || fail "verify after the skewed runs: $(cat verify.log)"

# --- an AWS spot interruption, 20 minutes ahead: its deadline (a time on AWS's clock) is
# judged by the store's clock: about 120 s, not 120 s less 20 minutes ---
start_meta aws
( wait_for 60 sh -c "ls '$W/c2' 2>/dev/null | grep -q '^step-'" && ctl "announce?in=0" ) &
announcer=$!
set +e
skewed +20m "$RR_BIN" --store "s3://$S3_BUCKET/skew-aws" --checkpoint-dir "$W/c2" --cloud aws \
	--metadata-endpoint "$META_URL" --poll-interval 1s \
	-- "${TICKER[@]}" --every 0.3 --until 1000 --obey > aws.log 2>&1
rc=$?
set -e
wait $announcer
expect_eq "$rc" "$RR_PREEMPTED" "preempted agent 20 minutes ahead"
expect_grep 'notice: preempt from aws, deadline in 1[01][0-9] s' aws.log "deadline by the store's clock"
# (Which commit answers the notice is judged by file times, which libfaketime leaves on the
# true clock while the agent's is moved: on a machine really off, both are. So the test asks
# only that the trainer's last checkpoint was persisted.)
expect_grep "persisted $(sed -nE 's/^exit for the notice after (step-[0-9]+)/\1/p' aws.log):" aws.log "the notice's checkpoint persisted"
expect_no_grep 'deadline passed' aws.log "no deadline missed"
ok "AWS interruption 20 minutes ahead: deadline in ~120 s by the store's clock; its checkpoint persisted"

# round NAME STORE: persist 20 minutes ahead, restore 20 minutes behind on a fresh machine,
# byte-identical.
round() {
	local name=$1 store=$2 rc
	set +e
	skewed +20m "$RR_BIN" --store "$store" --checkpoint-dir "$W/$name" -- "${TICKER[@]}" --every 0.3 --until 3 > "$name-ahead.log" 2>&1
	rc=$?
	set -e
	expect_eq "$rc" 0 "$name: agent 20 minutes ahead"
	expect_grep 'persisted step-3:' "$name-ahead.log" "$name: the last commit persisted"
	set +e
	skewed -20m "$RR_BIN" restore --store "$store" --to "$W/$name-r" > "$name-behind.log" 2>&1
	rc=$?
	set -e
	expect_eq "$rc" 0 "$name: restore 20 minutes behind"
	cmp -s "$W/$name-r/step-3/state.bin" "$W/$name/step-3/state.bin" || fail "$name: restored bytes differ"
}

# --- Azure Blob: Azurite behind the proxy, which refuses as Azure does ---
stop_faults
start_azurite
az_env
azcli storage container create -n "$AZ_CONTAINER" > /dev/null || fail "az storage container create"
start_proxy "$AZ_PORT" --max-skew 900
export AZURE_STORAGE_CONNECTION_STRING="AccountName=$AZ_ACCOUNT;AccountKey=$AZ_KEY;BlobEndpoint=$FAULT_URL/$AZ_ACCOUNT"
round azure "az://$AZ_CONTAINER/skew"
expect_grep 'clock is off by -1[12][0-9][0-9] s \(AuthenticationFailed\)' azure-ahead.log "Azure's time was taken"
expect_grep 'clock is off by 1[12][0-9][0-9] s \(AuthenticationFailed\)' azure-behind.log "Azure's time was taken"
curl -fsS "$FAULT_CTL/log" | "$PY" -c '
import json, sys
log = json.load(sys.stdin)
refused = [k for k, e in enumerate(log) if e["action"] == "skewed"]
# One refusal per agent (the first request of each), then every request dated right.
assert len(refused) == 2 and refused[0] == 0, refused' || fail "Azure: requests after the first refusal were still refused"
ok "Azure 20 minutes ahead and behind: 403 AuthenticationFailed once each, then dated by Azure's clock; persists and restores byte-identical"

# --- GCS with a service-account key: the token endpoint refuses a JWT off by its clock ---
gcs_key sa.json
start_gcs gcs.log --key-file sa.json
export STORAGE_EMULATOR_HOST="127.0.0.1:$GPORT" GOOGLE_APPLICATION_CREDENTIALS="$W/sa.json"
round gcs "gs://$S3_BUCKET/skew-gcs"
expect_grep 'refused the JWT and says this machine.s clock is off by -1[12][0-9][0-9] s' gcs-ahead.log "the token endpoint's time was taken"
ok "GCS 20 minutes ahead and behind: the JWT refused once for its iat, then dated by the token endpoint's clock; persists and restores byte-identical"
finish
