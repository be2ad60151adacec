#!/usr/bin/env bash
# Cloud preemption notices from the project's metadata test server (faithful to
# the clouds' metadata documentation (EC2 IMDSv2, GCE metadata, Azure Scheduled Events)),
# for each cloud: the server announces; the trainer is signalled; the
# checkpoint is durable before the deadline; the run's ledger says where it ran. Also: IMDS
# token expiry, a metadata outage in the middle of a run, a rebalance recommendation
# followed by the interruption, and --cloud auto choosing right and choosing none.
. "$(dirname "$0")/lib.sh"
. "$RR_SRC/tests/integration/metalib.sh"
unset RESUME_RUN_CLOUD

# drill CLOUD LOG [AGENT OPTIONS...]: trains until step-20 is committed, then has the server
# announce a preemption; the agent must get the trainer's checkpoint durable and exit
# $RR_PREEMPTED (the job is not finished: whatever relaunches it must).
drill() {
	local cloud=$1 log=$2; shift 2
	rm -rf ck "store-$cloud"
	( wait_for 60 has_checkpoint && ctl "announce?in=0" ) &
	local announcer=$!
	run_rr "$log" --log-format json --cloud "$cloud" --metadata-endpoint "$META_URL" \
		--checkpoint-dir ck --store "file://$W/store-$cloud" "$@" \
		-- "$PY" "$TRAINER" --steps 100000 --step-time 0.01 --checkpoint-every 20 --out out.json
	wait $announcer
	expect_eq "$RC" "$RR_PREEMPTED" "$cloud drill exit status"
	expect_grep '"msg":"notice: preempt from '"$cloud" "$log" "$cloud notice logged"
	expect_grep 'exiting for preemption' "$log" "the trainer checkpointed and left"
	expect_grep 'is durable in the store' "$log" "$cloud checkpoint durable"
}

has_checkpoint() { ls ck 2>/dev/null | grep -q '^step-'; }

# The instance identity in the ledger's notice event.
ledger_instance() { # STORE FIELD
	"$PY" - "$1" "$2" <<'PY'
import glob, json, sys
ev = [json.load(open(p)) for p in sorted(glob.glob(sys.argv[1] + "/default/events/*-notice.json"))]
print(ev[-1].get("instance", {}).get(sys.argv[2], "MISSING"))
PY
}

# --- AWS: IMDSv2, spot/instance-action ---
start_meta aws
drill aws aws.log --poll-interval 1s
expect_grep 'deadline in 1[0-9][0-9] s' aws.log "AWS deadline from the notice's time (~120 s)"
expect_eq "$(ledger_instance store-aws instance_id)" "i-0123456789abcdef0" "AWS instance id in the ledger"
expect_eq "$(ledger_instance store-aws lifecycle)" "spot" "AWS lifecycle in the ledger"
[ "$(state tokens_issued)" -ge 1 ] || fail "no IMDSv2 token was fetched"
ok "aws: spot interruption -> trainer signalled -> checkpoint durable; ledger has i-0123456789abcdef0, spot"

# Token expiry: every token is invalidated mid-run; the agent fetches a new one on the 401
# and still sees the notice.
ctl reset
tokens0=$(state tokens_issued)
rm -rf ck store-aws2
( wait_for 60 has_checkpoint && ctl expire-tokens && sleep 2 && ctl "announce?in=0" ) &
announcer=$!
run_rr aws-expiry.log --cloud aws --metadata-endpoint "$META_URL" --poll-interval 1s \
	--checkpoint-dir ck --store "file://$W/store-aws2" \
	-- "$PY" "$TRAINER" --steps 100000 --step-time 0.01 --checkpoint-every 20 --out out.json
wait $announcer
expect_eq "$RC" "$RR_PREEMPTED" "exit status after token expiry"
expect_grep 'is durable in the store' aws-expiry.log "notice handled after token expiry"
[ "$(state unauthorized_sent)" -ge 1 ] || fail "the server never refused an expired token"
[ "$(state tokens_issued)" -gt "$tokens0" ] || fail "no new token after expiry"
expect_no_grep 'metadata service:' aws-expiry.log "a token expiry is not an outage"
ok "aws: expired token -> 401 -> new token, notice still handled"

# Rebalance recommendation: checkpoint now and keep training; then the interruption itself.
ctl reset
rm -rf ck store-aws3
( wait_for 60 has_checkpoint && ctl "rebalance?in=0" &&
  wait_for 60 grep -q 'rebalance notice handled' aws-rebalance.log && sleep 1 && ctl "announce?in=0" ) &
announcer=$!
run_rr aws-rebalance.log --cloud aws --metadata-endpoint "$META_URL" --poll-interval 1s \
	--checkpoint-dir ck --store "file://$W/store-aws3" \
	-- "$PY" "$TRAINER" --steps 100000 --step-time 0.01 --checkpoint-every 20 --out out.json
wait $announcer
expect_eq "$RC" "$RR_PREEMPTED" "exit status after rebalance + interruption"
expect_grep 'notice: rebalance from aws' aws-rebalance.log "rebalance seen"
expect_grep 'rebalance notice handled; training goes on' aws-rebalance.log "training went on"
expect_grep 'notice: preempt from aws' aws-rebalance.log "then the interruption"
expect_grep 'exiting for preemption' aws-rebalance.log "trainer left on the interruption"
ok "aws: rebalance -> checkpoint, training goes on; interruption -> checkpoint and exit"

# Outage in the middle of a run: the service refuses connections for 4 s, then comes back;
# training never stops, the agent says so once, and a notice after it still works.
ctl reset
rm -rf ck store-aws4
( wait_for 60 has_checkpoint && ctl "fail?mode=down&for=4" && sleep 7 && ctl "announce?in=0" ) &
announcer=$!
run_rr aws-outage.log --cloud aws --metadata-endpoint "$META_URL" --poll-interval 1s \
	--checkpoint-dir ck --store "file://$W/store-aws4" \
	-- "$PY" "$TRAINER" --steps 100000 --step-time 0.01 --checkpoint-every 20 --out out.json
wait $announcer
expect_eq "$RC" "$RR_PREEMPTED" "exit status after an outage"
expect_grep 'aws metadata service: .*training goes on' aws-outage.log "the outage is reported"
[ "$(grep -c 'aws metadata service: ' aws-outage.log)" -le 2 ] || fail "more than two lines for one outage: $(grep -c 'aws metadata service: ' aws-outage.log)"
expect_grep 'aws metadata service answers again' aws-outage.log "the recovery is reported"
expect_grep 'is durable in the store' aws-outage.log "a notice after the outage is handled"
after_outage=$(sed -n '/aws metadata service: /,$p' aws-outage.log | grep -c 'checkpoint step-[0-9]* committed' || true)
[ "$after_outage" -ge 1 ] || fail "training did not go on during the outage"
ok "aws: metadata outage -> one line, training goes on, recovery logged, later notice handled"

# A spot interruption while the replacement's start-up restore runs: the restore stops and
# the trainer is never started on a machine that is going (the notice waited for the
# restore, then the trainer started and was asked). The restore is held up by a process
# holding every lock of the file store (the restore's lease is a write under one).
ctl reset
rm -rf ck-restore
run_rr seed.log --cloud none --checkpoint-dir "$W/ck-seed" --store "file://$W/store-restore" \
	-- "$PY" "$TRAINER" --steps 40 --step-time 0 --checkpoint-every 20 --out out.json
expect_eq "$RC" 0 "the run that stored a checkpoint"
hold_store_locks "$W/store-restore" 6
( sleep 1 && ctl "announce?in=0" ) &
announcer=$!
run_rr restoring.log --cloud aws --metadata-endpoint "$META_URL" --poll-interval 1s \
	--checkpoint-dir "$W/ck-restore" --store "file://$W/store-restore" \
	-- "$PY" "$TRAINER" --steps 100000 --step-time 0.01 --checkpoint-every 20 --out out.json
wait $announcer || true
wait "$LOCKER" || true
expect_eq "$RC" "$RR_PREEMPTED" "a preemption during the restore: exit status"
expect_grep 'notice: preempt from aws during the restore: stopping it' restoring.log "said"
expect_no_grep '^resume-run: started ' restoring.log "the trainer was started on a machine going"
ok "aws: spot interruption during the start-up restore -> restore stopped, trainer not started, exit $RR_PREEMPTED"
stop_meta

# --- GCP: hanging GETs on instance/preempted ---
start_meta gcp
drill gcp gcp.log
expect_grep 'deadline in (29|30) s' gcp.log "GCP deadline = received + 30 s"
expect_eq "$(ledger_instance store-gcp lifecycle)" "spot" "GCP lifecycle in the ledger"
ok "gcp: preempted TRUE via hanging GET -> checkpoint durable within the 30 s window"

# auto: the GCP server answers the probes as GCP
run_rr auto-gcp.log --cloud auto --metadata-endpoint "$META_URL" --checkpoint-dir ck-auto \
	--store "file://$W/store-auto" -- sleep 3
expect_grep 'cloud: gcp \(the GCP metadata server answered' auto-gcp.log "auto chose gcp"
ok "auto-detection chose gcp"
stop_meta

# --- Azure: Scheduled Events, with the acknowledgement ---
start_meta azure
drill azure azure.log --azure-ack
expect_grep 'deadline in (29|30) s' azure.log "Azure deadline from NotBefore"
wait_for 10 sh -c "curl -fsS '$META_CTL/_test/state' | grep -q '\"acks\": *\\[ *\"'" ||
	fail "the event was not acknowledged"
expect_eq "$(ledger_instance store-azure cloud)" "azure" "Azure in the ledger"
ok "azure: Preempt event for this VM -> checkpoint durable -> event acknowledged"

# A Preempt first seen already Started (approved before this agent polled: NotBefore blank,
# due now). Its checkpoint still gets a window (30 s), and the trainer's 0, some seconds after
# that checkpoint is durable, is not taken for a machine that outlived the notice: it was
# (the deadline was "passed" on arrival, and the job left with 0, never relaunched).
approve_first_event() {
	local id
	id=$(curl -fsS -H 'Metadata: true' "$META_URL/metadata/scheduledevents?api-version=2020-07-01" |
		"$PY" -c 'import json,sys; print(json.load(sys.stdin)["Events"][0]["EventId"])') &&
		curl -fsS -X POST -H 'Metadata: true' -H 'Content-Type: application/json' \
			-d "{\"StartRequests\":[{\"EventId\":\"$id\"}]}" \
			"$META_URL/metadata/scheduledevents?api-version=2020-07-01" > /dev/null
}
ctl reset
rm -rf ck store-azure-started
( wait_for 60 has_checkpoint && ctl "announce?in=0" && approve_first_event ) &
announcer=$!
run_rr azure-started.log --cloud azure --metadata-endpoint "$META_URL" --poll-interval 5s \
	--checkpoint-dir ck --store "file://$W/store-azure-started" -- sh -c \
	"'$PY' '$TRAINER' --steps 100000 --step-time 0.01 --checkpoint-every 20 --out out.json; rc=\$?; sleep 6; exit \$rc"
wait $announcer || fail "the event was not announced and approved"
expect_grep 'notice: preempt from azure' azure-started.log "the Started event seen"
expect_eq "$RC" "$RR_PREEMPTED" "a Preempt seen Started: exit status"
expect_no_grep 'outliving the notice' azure-started.log "not taken for an outlived notice"
ok "azure: Preempt first seen Started (due now) -> a 30 s window, checkpoint durable, exit $RR_PREEMPTED"

run_rr auto-azure.log --cloud auto --metadata-endpoint "$META_URL" --checkpoint-dir ck-auto \
	--store "file://$W/store-auto" -- sleep 3
expect_grep 'cloud: azure' auto-azure.log "auto chose azure"
stop_meta

# auto with nothing answering: none, and the trainer runs as usual. (The trainer lives
# longer than the probes' 1 s timeout: when it ends first, detection is abandoned unlogged.)
closed=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
start=$SECONDS
run_rr auto-none.log --cloud auto --metadata-endpoint "http://127.0.0.1:$closed" \
	--checkpoint-dir ck-none --store "file://$W/store-none" -- sh -c 'sleep 3; echo trainer ran'
expect_eq "$RC" 0 "exit status with no cloud"
expect_grep 'cloud: none' auto-none.log "auto chose none"
expect_grep 'trainer ran' auto-none.log "the trainer ran"
ok "auto-detection chose azure for Azure, none when nothing answers ($((SECONDS - start)) s)"
finish
