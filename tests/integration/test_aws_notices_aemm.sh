#!/usr/bin/env bash
# AWS notices against amazon-ec2-metadata-mock (AEMM) v1.13.0, AWS's own instance-metadata
# simulator, with IMDSv2 enforced (-I): the spot interruption (terminate with a set time, and
# stop with AEMM's own "request time + 2 minutes"), the rebalance recommendation followed by
# the interruption, and a scheduled maintenance event. For each: how long from the moment the
# mock starts answering to the trainer's signal (the agent polls every 2 s, its default), the
# deadline as the mock states it, and that every metadata request carried a session token
# (no IMDSv1 fallback: AEMM logs each tokenless request). The project's own metadata server
# (test_cloud_notices.sh) keeps what AEMM cannot do: token expiry, outages, GCP and Azure.
. "$(dirname "$0")/lib.sh"
. "$RR_SRC/tests/integration/aemmlib.sh"
unset RESUME_RUN_CLOUD
CLOCK="$RR_SRC/tests/integration/trainers/notice_clock.py"
POLL_S=2  # the agent's default AWS poll interval
# AEMM's spot mode serves the rebalance recommendation from its start unless told otherwise.
NO_REBALANCE=(--rebalance-delay-sec 86400)

# run_on_aemm NAME [TRAINER OPTIONS...]: runs the agent (cloud aws, at AEMM, default poll
# interval) with the clock trainer; its log is NAME.log, the trainer's requests NAME.jsonl.
run_on_aemm() {
	local name=$1; shift
	rm -rf "ck-$name"
	run_rr "$name.log" --cloud aws --metadata-endpoint "$AEMM_URL" --checkpoint-dir "ck-$name" \
		--store "file://$W/store-$name" -- "$PY" "$CLOCK" --out "$W/$name.jsonl" --max-seconds 60 "$@"
}

# request N FIELD NAME: a field of the trainer's Nth checkpoint request (1-based).
request() {
	"$PY" - "$W/$3.jsonl" "$1" "$2" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
n, field = int(sys.argv[2]), sys.argv[3]
if len(rows) < n:
    print("MISSING"); raise SystemExit
v = rows[n - 1]
for part in field.split("."):
    v = v.get(part) if isinstance(v, dict) else None
print("null" if v is None else v)
PY
}
requests() { [ -f "$W/$1.jsonl" ] && grep -c . "$W/$1.jsonl" || echo 0; }

# latency NAME N SINCE_UNIX: ms from SINCE_UNIX (when the mock started answering) to the
# trainer's Nth signal.
latency() { "$PY" -c "print(round(($(request "$2" signal_unix "$1") - $3) * 1000))"; }

# no_imdsv1 NAME: every request AEMM got carried a token, and some were checked.
no_imdsv1() {
	expect_no_grep 'No token provided' "$AEMM_LOG" "$1: a metadata request without a token (IMDSv1)"
	expect_grep 'Token validated' "$AEMM_LOG" "$1: requests with a token"
}

# check_latency NAME MS: within one poll interval and 2 s of slack for a loaded machine
# (the mock answers from the first second of its trigger time; the agent polls every 2 s).
check_latency() {
	[ "$2" -ge 0 ] && [ "$2" -le $(( (POLL_S + 2) * 1000 )) ] ||
		fail "$1: notice-to-signal latency $2 ms is outside 0..$(( (POLL_S + 2) * 1000 ))"
}

# --- spot interruption, terminate, at a time the mock states ---
trigger=$(rfc3339 4); action_time=$(rfc3339 100)
start_aemm terminate spot -a terminate -t "$action_time" --mock-trigger-time "$trigger" "${NO_REBALANCE[@]}"
run_on_aemm terminate
expect_eq "$RC" "$RR_PREEMPTED" "terminate: exit status"
expect_grep 'notice: preempt from aws' terminate.log "terminate: the notice"
expect_grep 'checkpoint step-[0-9]+ is durable in the store' terminate.log "terminate: durable"
expect_eq "$(requests terminate)" 1 "terminate: checkpoint requests"
expect_eq "$(request 1 notice.kind terminate)" preempt "terminate: the trainer's notice kind"
expect_eq "$(request 1 notice.source terminate)" aws "terminate: the notice's source"
expect_eq "$(request 1 notice.deadline_unix terminate)" "$(unix_of "$action_time")" \
	"terminate: deadline = the instance-action time"
lat=$(latency terminate 1 "$(unix_of "$trigger")"); check_latency terminate "$lat"
# The run's ledger names the instance as AEMM describes it.
"$PY" - "$W/store-terminate/default/events" > ident.txt <<'PY'
import glob, json, sys
ev = [json.load(open(p)) for p in sorted(glob.glob(sys.argv[1] + "/*-notice.json"))]
i = ev[-1]["instance"]
print(i.get("instance_id"), i.get("instance_type"), i.get("zone"), i.get("lifecycle"))
PY
expect_eq "$(cat ident.txt)" "i-1234567890abcdef0 m4.xlarge us-east-1a on-demand" "terminate: identity in the ledger"
no_imdsv1 terminate
stop_aemm
ok "terminate: signal $lat ms after AEMM started answering; deadline = its time ($action_time); durable; exit 75; every request with a token"

# --- spot interruption, stop, with AEMM's default time (request time + 2 minutes, computed
# anew on every request: the time moves while the notice stands) ---
trigger=$(rfc3339 4)
start_aemm stop spot -a stop --mock-trigger-time "$trigger" "${NO_REBALANCE[@]}"
run_on_aemm stop
expect_eq "$RC" "$RR_PREEMPTED" "stop: exit status"
expect_eq "$(requests stop)" 1 "stop: one checkpoint request, however the time moves"
expect_eq "$(request 1 notice.kind stop)" preempt "stop: notice kind"
received=$(request 1 notice.received_unix stop); deadline=$(request 1 notice.deadline_unix stop)
[ $((deadline - received)) -ge 118 ] && [ $((deadline - received)) -le 121 ] ||
	fail "stop: deadline $((deadline - received)) s after the notice, not AEMM's 2 minutes"
lat=$(latency stop 1 "$(unix_of "$trigger")"); check_latency stop "$lat"
no_imdsv1 stop
stop_aemm
ok "stop: signal $lat ms after AEMM started answering; deadline $((deadline - received)) s; one request though the time moved"

# --- rebalance recommendation (a precaution: checkpoint, train on), then the interruption ---
rb=$(rfc3339 4); itn=$(rfc3339 10); action_time=$(rfc3339 110)
start_aemm rebalance spot -a terminate -t "$action_time" --rebalance-trigger-time "$rb" --mock-trigger-time "$itn"
run_on_aemm rebalance
expect_eq "$RC" "$RR_PREEMPTED" "rebalance: exit status"
expect_eq "$(requests rebalance)" 2 "rebalance: checkpoint requests"
expect_eq "$(request 1 notice.kind rebalance)" rebalance "rebalance: first request's notice"
expect_eq "$(request 1 notice.deadline_unix rebalance)" null "rebalance: no deadline"
expect_eq "$(request 2 notice.kind rebalance)" preempt "rebalance: then the interruption"
expect_eq "$(request 2 notice.deadline_unix rebalance)" "$(unix_of "$action_time")" "rebalance: the interruption's deadline"
expect_grep 'rebalance notice handled; training goes on' rebalance.log "rebalance: training went on"
# Training went on between the two: the trainer committed on its own after the first.
first=$(request 1 name rebalance); second=$(request 2 name rebalance)
[ "${second#step-}" -gt $((${first#step-} + 1)) ] || fail "rebalance: no training between $first and $second"
lat_rb=$(latency rebalance 1 "$(unix_of "$rb")"); check_latency rebalance "$lat_rb"
lat=$(latency rebalance 2 "$(unix_of "$itn")"); check_latency "rebalance's interruption" "$lat"
no_imdsv1 rebalance
stop_aemm
ok "rebalance: checkpoint ($first, $lat_rb ms) and training on to $second (interruption, $lat ms); exit 75"

# --- scheduled maintenance (events/maintenance/scheduled: NotBefore as "2 Jan 2006 15:04:05 GMT") ---
trigger=$(rfc3339 4); not_before=$(rfc3339 600)
start_aemm events events -o system-reboot -t active -b "$not_before" --mock-trigger-time "$trigger"
run_on_aemm maintenance --leave-after 1
expect_eq "$RC" 0 "maintenance: exit status (the trainer finished; no preemption)"
expect_eq "$(request 1 notice.kind maintenance)" maintenance "maintenance: notice kind"
expect_eq "$(request 1 notice.deadline_unix maintenance)" "$(unix_of "$not_before")" "maintenance: deadline = NotBefore"
expect_eq "$(requests maintenance)" 1 "maintenance: one request for one event"
lat=$(latency maintenance 1 "$(unix_of "$trigger")"); check_latency maintenance "$lat"
no_imdsv1 maintenance
stop_aemm
ok "maintenance: system-reboot event -> checkpoint $lat ms after AEMM announced it; deadline = NotBefore ($not_before)"
finish
