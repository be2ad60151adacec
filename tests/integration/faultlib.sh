# The fault-injection proxy (tests/faults/proxy.py) between the agent and the S3 test
# server, sourced after lib.sh and s3lib.sh (and after start_s3 and s3_env).
FAULT_PID=

# start_faults: starts the proxy in front of $S3_PORT and points AWS_ENDPOINT_URL at it
# (s3cli keeps talking to the server directly through S3_DIRECT). Sets FAULT_CTL.
start_faults() {
	"$PY" "$RR_SRC/tests/faults/proxy.py" --upstream "127.0.0.1:$S3_PORT" \
		> "$W/faults.out" 2> "$W/faults.log" &
	FAULT_PID=$!
	wait_for 20 grep -q '^ready' "$W/faults.out" || fail "the fault proxy did not start"
	FAULT_CTL="http://127.0.0.1:$(sed -nE 's/^control ([0-9]+)/\1/p' "$W/faults.out")"
	S3_DIRECT="http://127.0.0.1:$S3_PORT"
	export AWS_ENDPOINT_URL="http://127.0.0.1:$(sed -nE 's/^ready ([0-9]+)/\1/p' "$W/faults.out")"
}

stop_faults() {
	[ -n "$FAULT_PID" ] || return 0
	kill "$FAULT_PID" 2>/dev/null || true
	wait "$FAULT_PID" 2>/dev/null || true
	FAULT_PID=
}

# fault JSON: adds a rule (see tests/faults/proxy.py); no_faults: removes them all.
fault() { curl -fsS -X POST --data-binary "$1" "$FAULT_CTL/rules" > /dev/null || fail "fault rule $1 refused"; }
no_faults() { curl -fsS -X DELETE "$FAULT_CTL/rules" > /dev/null; }
# fired: how many times the rules fired in all.
fired() { curl -fsS "$FAULT_CTL/rules" | "$PY" -c 'import json,sys; print(sum(r["fired"] for r in json.load(sys.stdin)))'; }
# s3d ARGS...: the AWS CLI at the server itself, past the proxy.
s3d() { /usr/bin/aws --endpoint-url "$S3_DIRECT" "$@"; }

trap 'f_rc=$?; stop_faults; stop_s3; (exit $f_rc); cleanup' EXIT
